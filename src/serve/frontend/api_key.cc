#include "serve/frontend/api_key.h"

#include <cctype>

namespace steno::serve {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool constant_time_equals(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || b.empty()) return false;  // the length is not secret enough to hide
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

bool bearer_token_matches(std::string_view authorization, std::string_view key) {
  const std::string_view auth = trim(authorization);
  constexpr std::string_view kScheme = "bearer ";
  if (auth.size() <= kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(auth[i])) != kScheme[i]) return false;
  return constant_time_equals(trim(auth.substr(kScheme.size())), key);
}

}  // namespace steno::serve
