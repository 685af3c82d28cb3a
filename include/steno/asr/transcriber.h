// The pipeline: a batch of 16 kHz mono clips in, transcripts out (features -> encoder -> TDT decoding ->
// detokenisation), with per-stage timings.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "steno/asr/model.h"
#include "steno/asr/tdt_beam.h"
#include "steno/asr/transcript.h"
#include "steno/ops/context.h"

namespace steno::asr {

struct StageTimings {
  double features_ms = 0;
  double encoder_ms = 0;
  double decoder_ms = 0;
  double detokenize_ms = 0;
  int64_t decoder_steps = 0;  // joint evaluations, summed over the batch
  double total_ms() const { return features_ms + encoder_ms + decoder_ms + detokenize_ms; }
  StageTimings& operator+=(const StageTimings& o);
};

class Transcriber {
 public:
  // `ctx` runs the model on its device (the model's): front end, encoder and decoder.
  Transcriber(std::shared_ptr<const AsrModel> model, ops::Context& ctx);
  ~Transcriber();
  Transcriber(Transcriber&&) noexcept;

  const AsrModel& model() const { return *model_; }

  // NeMo's long-form setting: a batch whose longest clip is over `from_seconds` runs the encoder with local
  // attention of half-width `window` (rel_pos_local_attn [window, window], the same weights), whose cost is linear
  // in the length where full attention's is quadratic. window 0: off (the model's own attention always).
  void set_long_form(double from_seconds, int window);
  bool is_long_form(double seconds) const { return long_encoder_.has_value() && seconds > long_from_seconds_; }

  // Decodes with beam search (tdt_beam.h) instead of NeMo's greedy decoding; nullopt: greedy again. The search
  // runs on the host, over the CPU decoder's weights; a GPU model's encoder output comes down to it.
  void set_beam(std::optional<BeamOptions> options);

  // Transcribes the clips as one padded batch. Clips too short to give a single encoder frame get an empty
  // transcript. `timings`, when given, receives this batch's stage timings.
  std::vector<Transcript> transcribe(const std::vector<std::span<const float>>& clips,
                                     StageTimings* timings = nullptr);

 private:
  // The batch's features on ctx_'s device (the CUDA front end there, the CPU one on the host), f32.
  Features features(const std::vector<std::span<const float>>& clips);
  Tensor on_host_f32(const Tensor& t);  // t on the host in f32 (itself when it already is)

  std::shared_ptr<const AsrModel> model_;
  ops::Context& ctx_;
  std::optional<ConformerEncoder> long_encoder_;  // the model's encoder with local attention (set_long_form)
  double long_from_seconds_ = 0;
  std::optional<BeamOptions> beam_;
  std::optional<ops::Context> host_ctx_;  // CUDA only: host work (a CPU decoder without a CUDA one)
  struct CudaState;                       // CUDA only: the GPU decoder's workspace (buffers, captured graphs)
  std::shared_ptr<CudaState> cuda_;
};

}  // namespace steno::asr
