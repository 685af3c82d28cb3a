// A diarization as text: speaker labels, RTTM lines and the JSON of POST /v1/audio/diarizations. Apart from
// diarize.cc so that what formats a result (the servers' frontends, their fuzz targets) needs no model.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "steno/core/error.h"
#include "steno/diar/diarize.h"

namespace steno::diar {

std::vector<int> Diarization::active_speakers() const {
  std::vector<int> out;
  for (const SpeakerSegment& s : segments) out.push_back(s.speaker);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double round_to_millisecond(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

std::string speaker_label(int speaker) { return fmt::format("speaker_{}", speaker); }

std::string to_rttm(const std::string& file_id, const Diarization& d) {
  const bool has_space = std::any_of(file_id.begin(), file_id.end(),
                                     [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
  STENO_CHECK(!file_id.empty() && !has_space, "RTTM file id '{}' must be non-empty without whitespace", file_id);
  std::string out;
  for (const SpeakerSegment& s : d.segments)
    out += fmt::format("SPEAKER {} 1 {:.3f} {:.3f} <NA> <NA> {} <NA> <NA>\n", file_id, s.start, s.end - s.start,
                       speaker_label(s.speaker));
  return out;
}

nlohmann::ordered_json to_json(const Diarization& d) {
  using oj = nlohmann::ordered_json;
  oj speakers = oj::array(), segments = oj::array();
  for (const int s : d.active_speakers()) speakers.push_back(speaker_label(s));
  for (const SpeakerSegment& s : d.segments)
    segments.push_back(oj{{"speaker", speaker_label(s.speaker)}, {"start", round_to_millisecond(s.start)},
                          {"end", round_to_millisecond(s.end)}});
  return oj{{"duration", d.audio_seconds}, {"speakers", speakers}, {"segments", segments}};
}

}  // namespace steno::diar
