#include "asr/unicode_punct.h"

#include <cstdint>
#include <utility>

namespace steno::asr {
namespace {

// Decodes one UTF-8 character; returns 0xFFFFFFFF for anything malformed.
uint32_t code_point(std::string_view ch) {
  const auto* s = reinterpret_cast<const unsigned char*>(ch.data());
  if (ch.size() == 1 && s[0] < 0x80) return s[0];
  if (ch.size() == 2) return ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu);
  if (ch.size() == 3) return ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
  if (ch.size() == 4) return ((s[0] & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
  return 0xFFFFFFFFu;
}

// Ranges of category-P code points outside ASCII that speech vocabularies contain in practice: Latin-1,
// General Punctuation, CJK and full-width forms. (A full UCD table is not worth carrying for detokenisation.)
constexpr std::pair<uint32_t, uint32_t> kPunctRanges[] = {
    {0x00A1, 0x00A1}, {0x00A7, 0x00A7}, {0x00AB, 0x00AB}, {0x00B6, 0x00B7}, {0x00BB, 0x00BB},
    {0x00BF, 0x00BF}, {0x037E, 0x037E}, {0x0387, 0x0387}, {0x055A, 0x055F}, {0x0589, 0x058A},
    {0x060C, 0x060D}, {0x061B, 0x061F}, {0x06D4, 0x06D4}, {0x0964, 0x0965}, {0x2010, 0x2027},
    {0x2030, 0x2043}, {0x2045, 0x2051}, {0x2053, 0x205E}, {0x3001, 0x3003}, {0x3008, 0x3011},
    {0x3014, 0x301F}, {0x30FB, 0x30FB}, {0xFF01, 0xFF03}, {0xFF05, 0xFF0A}, {0xFF0C, 0xFF0F},
    {0xFF1A, 0xFF1B}, {0xFF1F, 0xFF20}, {0xFF3B, 0xFF3D}, {0xFF3F, 0xFF3F}, {0xFF5B, 0xFF5B},
    {0xFF5D, 0xFF5D}, {0xFF5F, 0xFF65},
};

}  // namespace

std::vector<std::string> utf8_chars(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + len > text.size()) len = 1;
    out.emplace_back(text.substr(i, len));
    i += len;
  }
  return out;
}

bool is_unicode_punctuation(std::string_view ch) {
  const uint32_t cp = code_point(ch);
  if (cp < 0x80) {
    // ASCII category P: !"#%&'()*,-./:;?@[\]_{} (not the symbols $+<=>^`|~).
    constexpr std::string_view ascii_p = "!\"#%&'()*,-./:;?@[\\]_{}";
    return ascii_p.find(static_cast<char>(cp)) != std::string_view::npos;
  }
  for (const auto& [lo, hi] : kPunctRanges)
    if (cp >= lo && cp <= hi) return true;
  return false;
}

}  // namespace steno::asr
