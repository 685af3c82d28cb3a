// A diarization's answer kept to the speech, when the VAD is on for the server (--vad auto|on): Sortformer marks a
// speaker in silence at times (the bundled diarizer: 0.3 s of speaker_1 in 20 s of digital silence), and a client
// asking who spoke must not be told someone did in silence. Two rules, cheap enough for every request:
//   - a segment over audio silent throughout (its peak below -60 dBFS) is dropped;
//   - where the VAD ran anyway (a transcription with speakers whose audio it cut: InferenceCore), segments are cut
//     to its speech regions.
// The speaker probabilities are left as they are (words, which lie in speech, take their speakers from them). With
// --vad off the model's own answer goes out, as NeMo gives it.
#pragma once

#include <future>
#include <optional>
#include <span>
#include <vector>

#include "steno/serve/service.h"
#include "steno/vad/speech_regions.h"

namespace steno::serve {

class DiarizationGate {
 public:
  static constexpr double kSilentPeak = 1e-3;  // -60 dBFS
  static constexpr int kEnvelopeSamples = 160;  // 10 ms at 16 kHz

  // The VAD's regions, if it ran: found on the submitting thread while the diarizer already runs, so they may come
  // after the gate is made (apply() waits for them).
  using Speech = std::shared_future<std::optional<std::vector<vad::SampleRange>>>;

  // `pcm` at 16 kHz is read now (its peak per 10 ms is kept, not the audio).
  DiarizationGate(std::span<const float> pcm, Speech speech);
  DiarizationGate(std::span<const float> pcm, std::optional<std::vector<vad::SampleRange>> speech);
  void apply(DiarizationResult& d) const;

 private:
  bool silent(double start_s, double end_s) const;

  std::vector<float> peaks_;  // per 10 ms
  Speech speech_;
};

// `done` with its response's diarization gated.
AnswerFn gated(AnswerFn done, std::shared_ptr<const DiarizationGate> gate);

}  // namespace steno::serve
