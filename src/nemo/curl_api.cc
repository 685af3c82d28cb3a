#include "nemo/curl_api.h"

#include "core/run_time_library.h"
#include "steno/core/error.h"

namespace steno::nemo {
namespace {

CurlApi load() {
  // libcurl's soname since 7.16 (2006).
  RunTimeLibrary lib("libcurl.so.4", "downloads need libcurl; Debian: libcurl4");
  CurlApi t{};
  lib.bind(t.global_init, "curl_global_init");
  lib.bind(t.easy_init, "curl_easy_init");
  lib.bind(t.easy_setopt, "curl_easy_setopt");
  lib.bind(t.easy_perform, "curl_easy_perform");
  lib.bind(t.easy_getinfo, "curl_easy_getinfo");
  lib.bind(t.easy_strerror, "curl_easy_strerror");
  lib.bind(t.easy_cleanup, "curl_easy_cleanup");
  lib.bind(t.slist_append, "curl_slist_append");
  lib.bind(t.slist_free_all, "curl_slist_free_all");
  lib.require_all();
  if (t.global_init(CURL_GLOBAL_DEFAULT) != 0) fail(ErrorCode::kInternal, "libcurl failed to initialise");
  return t;
}

}  // namespace

const CurlApi& curl_api() { return load_once<CurlApi, load>(); }

}  // namespace steno::nemo
