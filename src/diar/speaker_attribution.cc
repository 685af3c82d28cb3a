#include "steno/diar/speaker_attribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "steno/core/error.h"
#include "steno/diar/diarize.h"

namespace steno::diar {

std::vector<SpeakerWord> attribute_words(const std::vector<asr::TimedText>& words, std::span<const float> probs,
                                         int64_t frames, int speakers, const AttributionParams& params) {
  STENO_CHECK(speakers > 0 && static_cast<int64_t>(probs.size()) == frames * speakers,
              "speaker attribution: {} probabilities for {} frames x {} speakers", probs.size(), frames, speakers);
  STENO_CHECK(params.frame_seconds > 0, "speaker attribution: frame_seconds must be positive");
  std::vector<SpeakerWord> out;
  out.reserve(words.size());
  std::vector<float> mean(static_cast<size_t>(speakers));
  for (const asr::TimedText& w : words) {
    SpeakerWord sw{w.text, w.start, w.end, 0, 0.0f};
    if (frames > 0) {
      // Word times are encoder frames x 0.08 s: rounding recovers the frames exactly.
      int64_t first = std::llround(w.start / params.frame_seconds);
      int64_t last = std::max<int64_t>(first + 1, std::llround(w.end / params.frame_seconds));
      first = std::clamp<int64_t>(first, 0, frames - 1);
      last = std::clamp<int64_t>(last, first + 1, frames);
      std::fill(mean.begin(), mean.end(), 0.0f);
      for (int64_t t = first; t < last; ++t)
        for (int s = 0; s < speakers; ++s) mean[s] += probs[t * speakers + s];
      float total = 0;
      for (float& m : mean) {
        m = std::max(m / static_cast<float>(last - first), params.min_probability);
        total += m;
      }
      sw.speaker = static_cast<int>(std::max_element(mean.begin(), mean.end()) - mean.begin());
      sw.confidence = mean[sw.speaker] / total;
    }
    out.push_back(std::move(sw));
  }
  return out;
}

std::vector<SpeakerTurn> speaker_turns(const std::vector<SpeakerWord>& words, const AttributionParams& params) {
  std::vector<SpeakerTurn> turns;
  for (const SpeakerWord& w : words) {
    const bool new_turn = turns.empty() || turns.back().speaker != w.speaker ||
                          w.start - turns.back().end > params.max_pause;
    if (new_turn) turns.push_back(SpeakerTurn{w.speaker, w.start, w.end, {}, {}});
    SpeakerTurn& t = turns.back();
    t.end = std::max(t.end, w.end);
    if (!t.text.empty()) t.text += ' ';
    t.text += w.text;
    t.words.push_back(w);
  }
  return turns;
}

std::vector<SpeakerTurn> speaker_transcript(const asr::Transcript& transcript, std::span<const float> probs,
                                            int64_t frames, int speakers, double frame_seconds) {
  AttributionParams params;
  params.frame_seconds = frame_seconds;
  return speaker_turns(attribute_words(transcript.words, probs, frames, speakers, params), params);
}

std::string turns_to_text(const std::vector<SpeakerTurn>& turns) {
  std::string out;
  for (const SpeakerTurn& t : turns)
    out += fmt::format("{} [{:.2f} - {:.2f}]: {}\n", speaker_label(t.speaker), t.start, t.end, t.text);
  return out;
}

nlohmann::ordered_json turns_to_json(const std::vector<SpeakerTurn>& turns) {
  using oj = nlohmann::ordered_json;
  oj out = oj::array();
  for (const SpeakerTurn& t : turns) {
    oj words = oj::array();
    for (const SpeakerWord& w : t.words)
      words.push_back(oj{{"text", w.text},
                         {"start", round_to_millisecond(w.start)},
                         {"end", round_to_millisecond(w.end)},
                         {"speaker", speaker_label(w.speaker)},
                         {"confidence", std::round(w.confidence * 1000.0f) / 1000.0}});
    out.push_back(oj{{"speaker", speaker_label(t.speaker)},
                     {"start", round_to_millisecond(t.start)},
                     {"end", round_to_millisecond(t.end)},
                     {"text", t.text},
                     {"words", words}});
  }
  return out;
}

}  // namespace steno::diar
