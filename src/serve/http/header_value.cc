#include "header_value.h"

#include <cctype>

#include "steno/core/error.h"

namespace steno::serve::http {

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

HeaderValue parse_header_value(std::string_view text) {
  HeaderValue out;
  size_t pos = text.find(';');
  out.value = to_lower(trim(text.substr(0, pos)));
  while (pos != std::string_view::npos && pos < text.size()) {
    ++pos;  // past ';'
    const size_t eq = text.find('=', pos);
    const size_t semi = text.find(';', pos);
    if (eq == std::string_view::npos || (semi != std::string_view::npos && semi < eq)) {
      // A bare token without '=' (e.g. a stray ';'): skip it.
      pos = semi;
      continue;
    }
    std::string key = to_lower(trim(text.substr(pos, eq - pos)));
    size_t v = eq + 1;
    while (v < text.size() && (text[v] == ' ' || text[v] == '\t')) ++v;
    std::string value;
    if (v < text.size() && text[v] == '"') {
      // quoted-string with backslash escapes (RFC 9110 §5.6.4)
      size_t i = v + 1;
      bool closed = false;
      for (; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          value.push_back(text[++i]);
        } else if (text[i] == '"') {
          closed = true;
          break;
        } else {
          value.push_back(text[i]);
        }
      }
      if (!closed) fail(ErrorCode::kInvalidArgument, "unterminated quoted string in header value '{}'", text);
      pos = text.find(';', i + 1);
    } else {
      const size_t end = text.find(';', v);
      value = std::string(trim(text.substr(v, end == std::string_view::npos ? text.size() - v : end - v)));
      pos = end;
    }
    if (!key.empty()) out.params.emplace(std::move(key), std::move(value));
  }
  return out;
}

}  // namespace steno::serve::http
