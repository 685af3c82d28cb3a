// NeMo's TransformerEncoder as Sortformer runs it: post-LN blocks of multi-head self-attention with a key padding
// mask and a ReLU feed-forward, no embedding, no final norm (docs/engine.md, "Sortformer").
#pragma once

#include <cstdint>
#include <vector>

#include "steno/core/tensor.h"
#include "steno/diar/sortformer_config.h"
#include "steno/ops/context.h"

namespace steno::asr {
class WeightStore;
}

namespace steno::diar {

class TransformerEncoder {
 public:
  // Reads transformer_encoder.layers.{i}.* (NeMo names) from `weights`.
  TransformerEncoder(const TransformerConfig& config, const asr::WeightStore& weights);
  ~TransformerEncoder();
  TransformerEncoder(TransformerEncoder&&) noexcept;
  TransformerEncoder& operator=(TransformerEncoder&&) noexcept;

  // A copy whose weights live on ctx's device in `dtype` (the CPU takes f32), from the device's weight allocator.
  TransformerEncoder to_device(ops::Context& ctx, DType dtype) const;

  const TransformerConfig& config() const { return config_; }

  // x [B, T, hidden_size] on the weights' device and dtype; lengths: valid frames per item. Per block:
  //   x = LN1(x + out_projection(attention(x)));  x = LN2(x + dense_out(relu(dense_in(x))))
  // Valid frames attend to valid frames only, so an item's result does not depend on its batch. Rows past a
  // length hold numbers no valid row depends on. `layer_outputs`, when given, receives a copy after each block.
  Tensor forward(ops::Context& ctx, const Tensor& x, const std::vector<int64_t>& lengths,
                 std::vector<Tensor>* layer_outputs = nullptr) const;

 private:
  struct Layer;
  TransformerEncoder(const TransformerConfig& config, std::vector<Layer> layers);
  TransformerConfig config_;
  std::vector<Layer> layers_;
};

}  // namespace steno::diar
