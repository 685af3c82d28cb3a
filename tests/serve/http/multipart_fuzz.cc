// libFuzzer target for the multipart/form-data parser (clang only; see CMakeLists.txt). The first line of the
// input is the Content-Type header, the rest the body; the parser must return parts or throw steno::Error, and
// every part it returns must lie inside the body.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "steno/core/error.h"
#include "serve/http/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string_view content_type = input.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  try {
    steno::serve::http::MultipartLimits limits;
    limits.max_parts = 16;
    for (const auto& part : steno::serve::http::parse_form_data(body, content_type, limits))
      if (part.data.data() < body.data() || part.data.data() + part.data.size() > body.data() + body.size()) abort();
  } catch (const steno::Error&) {
  }
  return 0;
}
