#include "steno/diar/diarize.h"

#include <fmt/format.h>

#include "steno/core/error.h"

namespace steno::diar {

Diarization diarization_from_probs(std::vector<float> probs, int64_t frames, double audio_seconds,
                                   const SortformerModel& model, const PostProcessingParams& params) {
  const int spk = model.num_speakers();
  STENO_CHECK(static_cast<int64_t>(probs.size()) == frames * spk, "diarization: {} probabilities for {} x {}",
              probs.size(), frames, spk);
  Diarization d;
  d.frames = frames;
  d.num_speakers = spk;
  d.audio_seconds = audio_seconds;
  d.probs = std::move(probs);
  d.segments = in_time_order(
      speaker_segments(d.probs, d.frames, spk, model.config().encoder.subsampling_factor, params));
  return d;
}

std::vector<Diarization> diarize(const SortformerModel& model, ops::Context& ctx,
                                 const std::vector<std::span<const float>>& clips,
                                 const PostProcessingParams& params) {
  params.validate();
  const SortformerOutput out = model.forward(ctx, clips);
  const int spk = model.num_speakers();
  const int64_t t = out.probs.dim(1);
  const float* p = out.probs.data<float>();
  std::vector<Diarization> result;
  for (size_t b = 0; b < clips.size(); ++b)
    result.push_back(diarization_from_probs(std::vector<float>(p + b * t * spk, p + (b * t + out.lengths[b]) * spk),
                                            out.lengths[b], static_cast<double>(clips[b].size()) / model.sample_rate(),
                                            model, params));
  return result;
}

}  // namespace steno::diar
