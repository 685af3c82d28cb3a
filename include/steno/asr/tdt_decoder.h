// The TDT transducer's prediction network (LSTM), joint network, and batched greedy label-looping decoding,
// exactly as NeMo's GreedyBatchedTDTLabelLoopingComputer (docs/engine.md, "Transducer" and "Greedy TDT decoding").
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "steno/asr/model_config.h"
#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::asr {

class WeightStore;

struct Hypothesis {
  std::vector<int> tokens;
  std::vector<int> timestamps;  // encoder frame each token was emitted at
  std::vector<int> durations;   // the duration value chosen with each token
  // Filled only when alignments are asked for: the joint output of every decoding step, with the label and
  // frame it decided (blank steps included).
  std::vector<std::vector<float>> step_logits;
  std::vector<int> step_labels, step_frames;
};

struct DecodeStats {
  int64_t steps = 0;          // joint evaluations across the batch (one per element and inner-loop step)
  int64_t lstm_updates = 0;   // prediction-network steps across the batch
};

class TdtDecoder {
 public:
  // Reads decoder.* and joint.* weights; uses config.decoder, .joint and .decoding.
  TdtDecoder(const ModelConfig& config, const WeightStore& weights);

  int blank_id() const { return vocab_size_; }

  // encoded [B, T, d_model] with valid lengths -> one hypothesis per clip.
  std::vector<Hypothesis> decode(ops::Context& ctx, const Tensor& encoded, const std::vector<int64_t>& lengths,
                                 bool keep_alignments = false, DecodeStats* stats = nullptr) const;

  // The weights (f32 CPU tensors shared with this decoder, read-only) and decoding settings: what another
  // implementation of the same decoding (the CUDA one, src/asr/cuda) places on its device.
  struct Parameters {
    int vocab_size = 0, max_symbols = 0;
    std::vector<int> durations;
    Tensor embed;                                // [V+1, P]
    std::vector<Tensor> w_ih, w_hh, b_ih, b_hh;  // per LSTM layer: [4H, In], [4H, H], [4H], [4H]
    Tensor enc_w, enc_b;                         // [J, d_model], [J]
    Tensor pred_w, pred_b;                       // [J, H], [J]
    Tensor out_w, out_b;                         // [V+1+durations, J], [V+1+durations]
    // [V+1, 4H]: the first LSTM layer's input projections of every token, embed·w_ih[0]ᵀ + b_ih[0] + b_hh[0]
    // (parameters(ctx) fills it; a decoder made from Parameters makes its own). Undefined, a step computes that
    // product as it goes; defined, it looks a row up: about half a step's work.
    Tensor input_gates;
  };
  Parameters parameters() const;
  // The same with input_gates, computed once per decoder with ctx's GEMM library (CPU) and kept.
  Parameters parameters(ops::Context& ctx) const;

  // A decoder over `p` (f32 CPU tensors, shared, not copied): another decoder's parameters() with some of them
  // replaced, e.g. the joint's output biases that `steno model random --token-rate` tunes (random_model.h).
  explicit TdtDecoder(const Parameters& p);

 private:
  int vocab_size_, joint_hidden_, max_symbols_;
  std::vector<int> durations_;
  Tensor embed_;                                 // [V+1, P]; row V (blank) is the zero SOS input
  std::vector<Tensor> w_ih_, w_hh_, b_ih_, b_hh_;  // per LSTM layer
  Tensor enc_w_, enc_b_, pred_w_, pred_b_, out_w_, out_b_;
  // Parameters::input_gates, made at the first decode (with its context's GEMM library, so that a process that
  // uses one library does not load the other) and shared by the lanes that share this decoder.
  struct InputGates {
    std::once_flag once;
    Tensor table;
  };
  std::shared_ptr<InputGates> input_gates_ = std::make_shared<InputGates>();
  const Tensor& input_gates(ops::Context& ctx) const;
};

}  // namespace steno::asr
