// libcurl opened at run time, by the first download (`steno model pull`): linked, it and the libraries it
// needs (TLS, Kerberos, LDAP, SSH, ...; about 25) cost every steno process ~8 ms at start on a 2-core machine,
// whatever it was asked to do. The functions steno calls, named as in libcurl without the prefix, in one table;
// the types are curl.h's.
#pragma once

#include <curl/curl.h>

namespace steno::nemo {

struct CurlApi {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_perform) easy_perform;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
};

// The table, loading libcurl.so.4 and initialising it (curl_global_init) on first use, thread-safe; throws
// kUnavailable naming the library when it cannot be loaded, kInternal when it does not initialise.
const CurlApi& curl_api();

}  // namespace steno::nemo
