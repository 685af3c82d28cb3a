// Word error rate, as ASR evaluations compute it: the word-level edit distance (substitutions + deletions +
// insertions, Levenshtein) between a reference and a hypothesis, divided by the reference's word count, after
// the same text normalisation on both sides.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace steno::asr {

// The normalisation steno's evaluations state: lowercase ASCII; every character other than a letter, a digit or
// an apostrophe becomes a space; runs of spaces collapse; leading/trailing spaces go. ("Hello, World!" ->
// "hello world"). Non-ASCII bytes are kept as they are.
std::string normalize_for_wer(std::string_view text);
std::vector<std::string> split_words(std::string_view normalized);

struct WordErrors {
  int substitutions = 0;
  int deletions = 0;   // reference words the hypothesis lacks
  int insertions = 0;  // hypothesis words the reference lacks
  int reference_words = 0;
  int errors() const { return substitutions + deletions + insertions; }
  double rate() const { return reference_words > 0 ? static_cast<double>(errors()) / reference_words : 0.0; }
  WordErrors& operator+=(const WordErrors& o);
};

// Aligns two word sequences with minimum edit distance (ties prefer substitutions, then deletions).
WordErrors word_errors(const std::vector<std::string>& reference, const std::vector<std::string>& hypothesis);
// Normalises both texts, then word_errors.
WordErrors word_errors(std::string_view reference, std::string_view hypothesis);

}  // namespace steno::asr
