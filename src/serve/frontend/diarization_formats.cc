#include "serve/frontend/diarization_formats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "steno/diar/diarize.h"

namespace steno::serve {
namespace {

double milliseconds(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

}  // namespace

std::string diarization_json(const DiarizationResult& d, double audio_seconds) {
  std::vector<int> heard;
  for (const SpeakerSegmentResult& s : d.segments) heard.push_back(s.speaker);
  std::sort(heard.begin(), heard.end());
  heard.erase(std::unique(heard.begin(), heard.end()), heard.end());
  nlohmann::ordered_json speakers = nlohmann::ordered_json::array(), segments = nlohmann::ordered_json::array();
  for (const int s : heard) speakers.push_back(diar::speaker_label(s));
  for (const SpeakerSegmentResult& s : d.segments)
    segments.push_back({{"speaker", diar::speaker_label(s.speaker)}, {"start", milliseconds(s.start)},
                        {"end", milliseconds(s.end)}});
  return nlohmann::ordered_json{{"duration", audio_seconds}, {"speakers", speakers}, {"segments", segments}}.dump();
}

std::string diarization_rttm(const DiarizationResult& d, const std::string& file_id) {
  std::string out;
  for (const SpeakerSegmentResult& s : d.segments)
    out += fmt::format("SPEAKER {} 1 {:.3f} {:.3f} <NA> <NA> {} <NA> <NA>\n", file_id, s.start, s.end - s.start,
                       diar::speaker_label(s.speaker));
  return out;
}

}  // namespace steno::serve
