// Speaker-attributed word error rate: cpWER (CHiME-6's concatenated minimum-permutation WER). Each speaker's words,
// in time order, form one sequence; hypothesis speakers are assigned one to one to reference speakers (a speaker
// without a partner is scored against nothing) so that the total word edits are fewest; then
//   cpWER = (substitutions + deletions + insertions) / reference words.
// A word given to the wrong speaker costs a deletion from the right one and an insertion into the wrong one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace steno::diar {

struct SpeakerWer {
  int64_t reference_words = 0;
  int64_t substitutions = 0;
  int64_t deletions = 0;
  int64_t insertions = 0;
  std::map<std::string, std::string> mapping;  // hypothesis speaker -> reference speaker
  int64_t errors() const { return substitutions + deletions + insertions; }
  double wer() const { return reference_words > 0 ? static_cast<double>(errors()) / reference_words : 0.0; }
};

using SpeakerWords = std::map<std::string, std::vector<std::string>>;

// At most 16 reference speakers (kInvalidArgument otherwise).
SpeakerWer cp_wer(const SpeakerWords& reference, const SpeakerWords& hypothesis);

// The words of a text under steno's WER normalisation (asr/wer.h: lower case, anything but letters, digits and
// apostrophes a space): "Hello, it's me." -> hello it's me.
std::vector<std::string> normalized_words(std::string_view text);

}  // namespace steno::diar
