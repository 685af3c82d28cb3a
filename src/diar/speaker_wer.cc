#include "steno/diar/speaker_wer.h"

#include <algorithm>
#include <limits>

#include "asr/wer.h"
#include "steno/core/error.h"

namespace steno::diar {

namespace {
using Edits = asr::WordErrors;  // the one word alignment (ties prefer substitutions, then deletions)
}  // namespace

SpeakerWer cp_wer(const SpeakerWords& reference, const SpeakerWords& hypothesis) {
  STENO_CHECK(reference.size() <= 16, "cpWER: {} reference speakers, at most 16 are scored", reference.size());
  std::vector<std::string> refs, hyps;
  for (const auto& [s, _] : reference) refs.push_back(s);
  for (const auto& [s, _] : hypothesis) hyps.push_back(s);
  const size_t nr = refs.size(), nh = hyps.size(), states = size_t{1} << nr;

  // cost of hypothesis h against reference r, or against nothing (r == nr): all insertions
  std::vector<std::vector<Edits>> pair(nh, std::vector<Edits>(nr + 1));
  for (size_t h = 0; h < nh; ++h) {
    const auto& hw = hypothesis.at(hyps[h]);
    for (size_t r = 0; r < nr; ++r) pair[h][r] = asr::word_errors(reference.at(refs[r]), hw);
    pair[h][nr].insertions = static_cast<int>(hw.size());
  }
  // Bitmask dynamic programming over the reference speakers taken; references left at the end are all deletions.
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
  std::vector<std::vector<int64_t>> best(nh + 1, std::vector<int64_t>(states, kInf));
  std::vector<std::vector<int>> choice(nh + 1, std::vector<int>(states, -1));
  best[0][0] = 0;
  for (size_t h = 0; h < nh; ++h)
    for (size_t used = 0; used < states; ++used) {
      if (best[h][used] >= kInf) continue;
      for (size_t r = 0; r <= nr; ++r) {
        if (r < nr && (used & (size_t{1} << r))) continue;
        const size_t next = r < nr ? used | (size_t{1} << r) : used;
        const int64_t v = best[h][used] + pair[h][r].errors();
        if (v < best[h + 1][next]) {
          best[h + 1][next] = v;
          choice[h + 1][next] = static_cast<int>(r);
        }
      }
    }
  size_t used = 0;
  int64_t best_total = kInf;
  for (size_t u = 0; u < states; ++u) {
    if (best[nh][u] >= kInf) continue;
    int64_t left = 0;
    for (size_t r = 0; r < nr; ++r)
      if (!(u & (size_t{1} << r))) left += static_cast<int64_t>(reference.at(refs[r]).size());
    if (best[nh][u] + left < best_total) {
      best_total = best[nh][u] + left;
      used = u;
    }
  }
  SpeakerWer out;
  for (size_t r = 0; r < nr; ++r) {
    out.reference_words += static_cast<int64_t>(reference.at(refs[r]).size());
    if (!(used & (size_t{1} << r))) out.deletions += static_cast<int64_t>(reference.at(refs[r]).size());
  }
  for (size_t h = nh; h > 0; --h) {
    const int r = choice[h][used];
    const Edits& e = pair[h - 1][r];
    out.substitutions += e.substitutions;
    out.deletions += e.deletions;
    out.insertions += e.insertions;
    if (r < static_cast<int>(nr)) {
      out.mapping[hyps[h - 1]] = refs[r];
      used &= ~(size_t{1} << r);
    }
  }
  return out;
}

std::vector<std::string> normalized_words(std::string_view text) {
  return asr::split_words(asr::normalize_for_wer(text));
}

}  // namespace steno::diar
