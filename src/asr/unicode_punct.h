// The little Unicode knowledge detokenisation needs: splitting UTF-8 into characters and telling punctuation
// (general category P*) apart.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace steno::asr {

// Splits UTF-8 text into one string per code point; invalid bytes become one-byte strings.
std::vector<std::string> utf8_chars(std::string_view text);
// True when the single UTF-8 character `ch` is in a Unicode punctuation category (Pc, Pd, Ps, Pe, Pi, Pf, Po).
bool is_unicode_punctuation(std::string_view ch);

}  // namespace steno::asr
