// The FastConformer encoder (NeMo's ConformerEncoder with dw_striding subsampling; docs/engine.md, "Encoder").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "steno/asr/model_config.h"
#include "steno/core/tensor.h"
#include "steno/ops/attention.h"
#include "steno/ops/context.h"

namespace steno::asr {

class WeightStore;

// Everything an encoder run produces. `layer_outputs` is filled only when asked for (tests, debugging).
struct EncoderOutput {
  Tensor encoded;                // [B, T, d_model]
  std::vector<int64_t> lengths;  // valid frames per clip
  Tensor pre_encode;             // [B, T, d_model], the subsampling output (before xscaling)
  std::vector<Tensor> layer_outputs;
};

class ConformerEncoder {
 public:
  // Reads the encoder.* weights (NeMo names) from `weights`, folding each conv module's batch norm into its
  // depthwise convolution. `masked_subsampling`: NeMo >= 2.5 zeroes padded frames before every subsampling
  // layer. `window`: the attention span ({-1,-1} full, {w,w} NeMo's rel_pos_local_attn).
  ConformerEncoder(const EncoderConfig& config, bool masked_subsampling, ops::AttentionWindow window,
                   const WeightStore& weights);
  ~ConformerEncoder();
  ConformerEncoder(ConformerEncoder&&) noexcept;

  // A copy of this encoder whose weights live on ctx's device in `dtype` (f32, f16 or bf16; the CPU takes f32),
  // allocated from the device's process-wide weight allocator so that every context there shares them.
  // fp8_linears: the Conformer layers' linear layers (feed-forward, attention projections, the conv module's
  // pointwise convs) take FP8 rows (steno/ops/fp8.h): their weights are stored in FP8 only and their inputs are
  // quantized per token; every other op stays in `dtype` (f16 or bf16). Needs a device that runs FP8.
  ConformerEncoder to_device(ops::Context& ctx, DType dtype, bool fp8_linears = false) const;
  // This encoder with another attention span over the same weight tensors (shared, not copied): NeMo's long-form
  // setting (change_attention_model to rel_pos_local_attn) chosen per batch without a second copy of the model.
  ConformerEncoder with_attention_window(ops::AttentionWindow window) const;
  DType dtype() const;   // the weights' (and so the activations') dtype
  Device device() const;
  bool fp8_linears() const;  // see to_device

  const EncoderConfig& config() const { return config_; }
  ops::AttentionWindow attention_window() const { return window_; }
  // Whether padding past a clip's frames leaves its valid outputs as they are (up to rounding): the subsampling
  // masks it (NeMo >= 2.5). Without the masks (2.4) the padding reaches the last frames' context.
  bool masks_padding() const { return masked_subsampling_; }
  // Encoder frames for `feature_frames` valid feature frames (ceil(N / 2) per stride-2 stage).
  int64_t output_length(int64_t feature_frames) const;
  // Every per-clip frame count a forward() over clips of `feature_lengths` masks with, in order: the features',
  // after each stride-2 stage, the last being the output's (a graph's length parameters: encoder_graphs.h).
  std::vector<std::vector<int64_t>> frame_counts(const std::vector<int64_t>& feature_lengths) const;

  // features [B, F, feat_in] (time-major, zero past each length) on the encoder's device in its dtype ->
  // EncoderOutput in the same place: pre_encode() then encode().
  EncoderOutput forward(ops::Context& ctx, const Tensor& features, const std::vector<int64_t>& lengths,
                        bool keep_layer_outputs = false) const;

  // The two halves of forward(), for callers that keep subsampled frames and encode them again in other company
  // (Sortformer's streaming speaker cache; NeMo's bypass_pre_encode): the dw_striding subsampling, features ->
  // embeddings [B, T, d_model] (lengths updated in place); then xscaling and the Conformer layers over embeddings
  // [B, T, d_model] with `lengths` valid frames each.
  Tensor pre_encode(ops::Context& ctx, const Tensor& features, std::vector<int64_t>& lengths) const;
  EncoderOutput encode(ops::Context& ctx, const Tensor& embeddings, const std::vector<int64_t>& lengths,
                       bool keep_layer_outputs = false) const;

  // The relative positional table NeMo builds for relative positions R..-R: [2R+1, d_model].
  static Tensor relative_positions(int64_t max_relative, int d_model);

 private:
  struct Layer;
  struct Subsampling;
  ConformerEncoder(const ConformerEncoder& other, std::unique_ptr<Subsampling> sub, std::vector<Layer> layers);
  Tensor subsample(ops::Context& ctx, const Tensor& features, std::vector<int64_t>& lengths) const;
  Tensor subsample_in_chunks(ops::Context& ctx, const Tensor& features, std::vector<int64_t>& lengths) const;
  void run_layer(ops::Context& ctx, const Layer& layer, Tensor& x, const Tensor& pos,
                 const std::vector<int64_t>& lengths) const;

  EncoderConfig config_;
  bool masked_subsampling_;
  ops::AttentionWindow window_;
  std::unique_ptr<Subsampling> subsampling_;
  std::vector<Layer> layers_;
};

}  // namespace steno::asr
