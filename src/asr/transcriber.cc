#include "steno/asr/transcriber.h"

#include <chrono>

namespace steno::asr {
namespace {

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

StageTimings& StageTimings::operator+=(const StageTimings& o) {
  features_ms += o.features_ms;
  encoder_ms += o.encoder_ms;
  decoder_ms += o.decoder_ms;
  detokenize_ms += o.detokenize_ms;
  decoder_steps += o.decoder_steps;
  return *this;
}

std::vector<Transcript> Transcriber::transcribe(const std::vector<std::span<const float>>& clips,
                                                StageTimings* timings) {
  const AsrModel& m = *model_;
  std::vector<Transcript> results(clips.size());
  for (size_t i = 0; i < clips.size(); ++i)
    results[i].audio_seconds = static_cast<double>(clips[i].size()) / m.sample_rate();

  // Only clips that yield at least two feature frames (normalisation needs a spread) go through the model.
  std::vector<size_t> runnable;
  std::vector<std::span<const float>> batch;
  for (size_t i = 0; i < clips.size(); ++i) {
    if (m.features().valid_frames(static_cast<int64_t>(clips[i].size())) >= 2) {
      runnable.push_back(i);
      batch.push_back(clips[i]);
    }
  }
  StageTimings local;
  if (!batch.empty()) {
    auto start = std::chrono::steady_clock::now();
    Features feats = m.features().compute(ctx_, batch);
    local.features_ms = elapsed_ms(start);

    start = std::chrono::steady_clock::now();
    EncoderOutput enc = m.encoder().forward(ctx_, feats.values, feats.lengths);
    local.encoder_ms = elapsed_ms(start);

    start = std::chrono::steady_clock::now();
    DecodeStats stats;
    std::vector<Hypothesis> hyps = m.decoder().decode(ctx_, enc.encoded, enc.lengths, false, &stats);
    local.decoder_ms = elapsed_ms(start);
    local.decoder_steps = stats.steps;

    start = std::chrono::steady_clock::now();
    for (size_t j = 0; j < runnable.size(); ++j) {
      Transcript t = build_transcript(hyps[j], m.tokenizer(), m.frame_seconds());
      t.audio_seconds = results[runnable[j]].audio_seconds;
      results[runnable[j]] = std::move(t);
    }
    local.detokenize_ms = elapsed_ms(start);
  }
  if (timings) *timings = local;
  return results;
}

}  // namespace steno::asr
