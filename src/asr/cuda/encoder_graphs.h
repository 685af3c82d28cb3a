// The encoder of small batches replayed from CUDA graphs. At batch 1 a 45 s clip's encoder is ~540 kernel
// launches whose host cost exceeded the GPU's work for them (an H200 with the 0.6B model: 17.8 ms of wall time
// for 8.1 ms of kernels, bench/results/h200-engine.md); a graph queues them in one launch.
//
// A graph is captured per bucket: the batch size and its feature frames rounded up to a step. The clips' own
// frame counts are the graph's length parameters (src/ops/cuda/lengths_graph.h), so every batch of a bucket
// replays it: its features are staged into the bucket's input (zeros past them), the graph runs, its output is
// copied out. The padding is what batching with a longer clip does, masked away from the valid frames; so only
// encoders whose subsampling masks it (NeMo >= 2.5 front ends) run from graphs: in a 2.4 encoder the padding
// reaches the last frames' context, and a bucket's would change the answer of the batch it pads.
// A bucket's first batch runs eagerly on the bucket's shape (making what the encoder makes on first use: the
// positional table, GEMM plans), its second is captured. At most max_graphs buckets, the least recently used
// dropped. Not built without CUDA; the header names no CUDA type.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "steno/asr/encoder.h"
#include "steno/ops/context.h"

namespace steno::asr {

struct EncoderGraphOptions {
  bool enabled = true;
  int64_t max_batch = 8;      // larger batches keep the GPU busy from eager launches
  int64_t frame_step = 128;   // feature frames per bucket step: 1.28 s, a multiple of the encoder's 8-frame padding
  int64_t max_frames = 6000;  // longer batches (60 s) run eagerly: few launches per second of audio
  size_t max_buckets = 32;
};
// The options the Transcriber takes: the defaults, with `enabled` from $STENO_ENCODER_GRAPHS ("0" or "1"; unset:
// off). Off by default, as measured on the H200 (docs/engine.md): 0.7 ms less encoder time at 1 x 45 s and ~1 ms
// at 8 x 45 s, for transcripts that move with the padded shapes in bf16 (49 of the bundled test set's 55 equal
// the CPU engine's, against 51 eager).
EncoderGraphOptions default_encoder_graph_options();

class EncoderGraphs {
 public:
  explicit EncoderGraphs(EncoderGraphOptions options = default_encoder_graph_options());
  ~EncoderGraphs();
  EncoderGraphs(EncoderGraphs&&) noexcept;
  EncoderGraphs& operator=(EncoderGraphs&&) noexcept;

  // encoder.forward(ctx, features, lengths) over the features padded to their bucket: from the bucket's graph
  // where it has one, eagerly otherwise. nullopt (nothing queued) where the options leave the batch out: the caller
  // runs forward() itself. features: [B, F, feat_in] on ctx's CUDA device in the encoder's dtype, zero past each
  // length. The output has the bucket's frames (the valid ones per `lengths` as forward() gives them). A
  // workspace serves one context and one encoder at a time; another frees its graphs first. Not thread-safe.
  std::optional<EncoderOutput> run(ops::Context& ctx, const ConformerEncoder& encoder, const Tensor& features,
                                   const std::vector<int64_t>& lengths);

  const EncoderGraphOptions& options() const { return options_; }
  size_t num_graphs() const;      // graphs held now
  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }
  void clear();  // frees every bucket (after the context's queued work)

 private:
  struct Bucket;
  struct State;
  Bucket& bucket(ops::Context& ctx, const ConformerEncoder& encoder, int64_t batch, int64_t frames);

  EncoderGraphOptions options_;
  std::unique_ptr<State> state_;
  int64_t captures_ = 0, replays_ = 0;
};

}  // namespace steno::asr
