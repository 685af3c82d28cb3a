// Diarization error rate, as NIST's md-eval scores it: reference and hypothesis speakers are mapped one to one so
// that their overlap is largest; then over the scored time (all of it, less a no-score collar of +-collar seconds
// around every reference segment edge), with overlapped speech counted (each speaker's time is scored)
//   missed      = sum dur * max(0, N_ref - N_hyp)
//   false alarm = sum dur * max(0, N_hyp - N_ref)
//   confusion   = sum dur * (min(N_ref, N_hyp) - N_mapped_pairs_both_active)
//   DER         = (missed + false alarm + confusion) / sum dur * N_ref
// where N_ref / N_hyp count the speakers active in an interval. Segments of one speaker that overlap count once.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace steno::diar {

struct LabeledSegment {
  std::string speaker;
  double start = 0;  // seconds
  double end = 0;
};

struct DerResult {
  double reference_speech = 0;  // scored speaker time of the reference (overlap counted per speaker)
  double missed = 0;
  double false_alarm = 0;
  double confusion = 0;
  std::map<std::string, std::string> mapping;  // hypothesis speaker -> reference speaker
  double der() const { return reference_speech > 0 ? (missed + false_alarm + confusion) / reference_speech : 0; }
  DerResult& operator+=(const DerResult& other);  // totals over files (the mapping is not merged)
};

// Both sides of one recording. At most 16 speakers a side (kInvalidArgument otherwise); collar >= 0.
DerResult diarization_error(const std::vector<LabeledSegment>& reference,
                            const std::vector<LabeledSegment>& hypothesis, double collar = 0.25);

// RTTM text -> segments by file id, from "SPEAKER <file> <chan> <start> <duration> <NA> <NA> <speaker> ..." lines
// (other record types and blank or ';;' lines are skipped). A malformed SPEAKER line is kInvalidArgument naming
// its line number; `source` names the file in messages.
std::map<std::string, std::vector<LabeledSegment>> parse_rttm(std::string_view text, const std::string& source);

}  // namespace steno::diar
