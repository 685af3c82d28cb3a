#include "steno/diar/transformer_encoder.h"

#include <fmt/format.h>

#include "steno/asr/weight_store.h"
#include "steno/core/cuda.h"
#include "steno/ops/activation.h"
#include "steno/ops/attention.h"
#include "steno/ops/copy.h"
#include "steno/ops/elementwise.h"
#include "steno/ops/gemm.h"
#include "steno/ops/norm.h"

namespace steno::diar {

namespace {
constexpr float kNormEps = 1e-5f;  // NeMo's TransformerEncoderBlock LayerNorms
}  // namespace

struct TransformerEncoder::Layer {
  Tensor ln1_g, ln1_b, ln2_g, ln2_b;
  Tensor q_w, q_b, k_w, k_b, v_w, v_b, out_w, out_b;
  Tensor in_w, in_b, dense_out_w, dense_out_b;

  template <typename F> void for_each_weight(F&& f) {
    for (Tensor* t : {&ln1_g, &ln1_b, &ln2_g, &ln2_b, &q_w, &q_b, &k_w, &k_b, &v_w, &v_b, &out_w, &out_b, &in_w,
                      &in_b, &dense_out_w, &dense_out_b})
      f(*t);
  }
};

TransformerEncoder::~TransformerEncoder() = default;
TransformerEncoder::TransformerEncoder(TransformerEncoder&&) noexcept = default;
TransformerEncoder& TransformerEncoder::operator=(TransformerEncoder&&) noexcept = default;

TransformerEncoder::TransformerEncoder(const TransformerConfig& config, std::vector<Layer> layers)
    : config_(config), layers_(std::move(layers)) {}

TransformerEncoder::TransformerEncoder(const TransformerConfig& config, const asr::WeightStore& w) : config_(config) {
  STENO_CHECK(config.num_attention_heads >= 1 && config.hidden_size % config.num_attention_heads == 0,
              "transformer: {} heads do not divide hidden_size {}", config.num_attention_heads, config.hidden_size);
  for (int i = 0; i < config.num_layers; ++i) {
    const std::string l = fmt::format("transformer_encoder.layers.{}.", i);
    const std::string att = l + "first_sub_layer.", ff = l + "second_sub_layer.";
    layers_.push_back({w.get(l + "layer_norm_1.weight"), w.get(l + "layer_norm_1.bias"),
                       w.get(l + "layer_norm_2.weight"), w.get(l + "layer_norm_2.bias"),
                       w.get(att + "query_net.weight"), w.get(att + "query_net.bias"),
                       w.get(att + "key_net.weight"), w.get(att + "key_net.bias"),
                       w.get(att + "value_net.weight"), w.get(att + "value_net.bias"),
                       w.get(att + "out_projection.weight"), w.get(att + "out_projection.bias"),
                       w.get(ff + "dense_in.weight"), w.get(ff + "dense_in.bias"),
                       w.get(ff + "dense_out.weight"), w.get(ff + "dense_out.bias")});
  }
}

TransformerEncoder TransformerEncoder::to_device(ops::Context& ctx, DType dtype) const {
  STENO_CHECK(!ctx.device().is_cpu() || dtype == DType::kF32, "transformer: the CPU computes in f32, not {}",
              dtype_name(dtype));
  Allocator& alloc = ctx.device().is_cpu() ? static_cast<Allocator&>(default_cpu_allocator())
                                           : steno::cuda::weight_allocator(ctx.device().index);
  std::vector<Layer> layers = layers_;
  for (Layer& layer : layers) layer.for_each_weight([&](Tensor& t) { t = ops::place(ctx, t, dtype, alloc); });
  return TransformerEncoder(config_, std::move(layers));
}

Tensor TransformerEncoder::forward(ops::Context& ctx, const Tensor& input, const std::vector<int64_t>& lengths,
                                   std::vector<Tensor>* layer_outputs) const {
  STENO_CHECK(input.rank() == 3 && input.dim(2) == config_.hidden_size,
              "transformer: input must be [B, T, {}], got {}", config_.hidden_size, shape_str(input.shape()));
  const int64_t batch = input.dim(0), t = input.dim(1), d = input.dim(2);
  const DType dt = input.dtype();
  Tensor x = ops::clone(ctx, input);
  Tensor q = ctx.scratch({batch, t, d}, dt), k = ctx.scratch({batch, t, d}, dt), v = ctx.scratch({batch, t, d}, dt);
  Tensor h = ctx.scratch({batch, t, d}, dt);
  Tensor wide = ctx.scratch({batch, t, config_.inner_size}, dt);
  for (const Layer& L : layers_) {
    ops::linear(ctx, x, L.q_w, L.q_b, q);
    ops::linear(ctx, x, L.k_w, L.k_b, k);
    ops::linear(ctx, x, L.v_w, L.v_b, v);
    ops::self_attention(ctx, q, k, v, config_.num_attention_heads, lengths, q);
    ops::linear(ctx, q, L.out_w, L.out_b, h);
    ops::add(ctx, x, h, 1.0f, x);
    ops::layer_norm(ctx, x, L.ln1_g, L.ln1_b, kNormEps, x);

    ops::linear(ctx, x, L.in_w, L.in_b, wide);
    ops::relu(ctx, wide, wide);
    ops::linear(ctx, wide, L.dense_out_w, L.dense_out_b, h);
    ops::add(ctx, x, h, 1.0f, x);
    ops::layer_norm(ctx, x, L.ln2_g, L.ln2_b, kNormEps, x);
    if (layer_outputs != nullptr) layer_outputs->push_back(ops::clone(ctx, x));
  }
  return x;
}

}  // namespace steno::diar
