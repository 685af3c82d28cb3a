// libFuzzer target: an upload's multipart/form-data (serve/http/multipart.h) on any bytes. The input's first line
// is the Content-Type header value, the rest the body. Parsing must return parts that lie within the body, or throw
// steno::Error; the prefix search (find_part_data) must return an offset within its prefix. Built and run by
// fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/http/multipart.h"
#include "steno/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t eol = input.find('\n');
  const std::string_view content_type = input.substr(0, eol), body = eol == input.npos ? "" : input.substr(eol + 1);
  const auto within = [&](std::string_view part) {
    return part.empty() || (part.data() >= body.data() && part.data() + part.size() <= body.data() + body.size());
  };
  std::string boundary;
  try {
    boundary = steno::serve::http::multipart_boundary(content_type);
    for (const auto& part : steno::serve::http::parse_multipart(body, boundary))
      if (!within(part.data)) std::abort();
  } catch (const steno::Error&) {
  }
  if (boundary.empty()) return 0;
  const auto at = steno::serve::http::find_part_data(body, boundary, "file");  // noexcept
  if (at && *at > body.size()) std::abort();
  return 0;
}
