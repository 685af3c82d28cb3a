// Parsing of structured HTTP header values: `type/subtype; key=value; key="quoted \"value\""`, as used by
// Content-Type and Content-Disposition. Beast-free so that the multipart parser and the API handlers share it.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace steno::serve::http {

struct HeaderValue {
  std::string value;                          // the part before the first ';', trimmed and lower-cased
  std::map<std::string, std::string> params;  // parameter names lower-cased; values unquoted, case kept
};

// Lenient about whitespace, strict about quoting: an unterminated quoted string throws kInvalidArgument.
// A parameter given twice keeps its first value (RFC 7578 forbids repeating them; first-wins is the safe reading).
HeaderValue parse_header_value(std::string_view text);

std::string to_lower(std::string_view s);
std::string_view trim(std::string_view s);

}  // namespace steno::serve::http
