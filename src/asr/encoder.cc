#include "steno/asr/encoder.h"

#include <array>
#include <algorithm>
#include <cmath>

#include "steno/asr/weight_store.h"
#include "steno/core/cuda.h"
#include "steno/ops/activation.h"
#include "steno/ops/conv.h"
#include "steno/ops/copy.h"
#include "steno/ops/elementwise.h"
#include "steno/ops/fp8.h"
#include "steno/ops/fused.h"
#include "steno/ops/gemm.h"
#include "steno/ops/norm.h"

namespace steno::asr {
namespace {

constexpr float kNormEps = 1e-5f;  // every LayerNorm and the conv module's BatchNorm

struct LayerNormWeights {
  Tensor gamma, beta;
};

LayerNormWeights load_norm(const WeightStore& w, const std::string& name) {
  return {w.get(name + ".weight"), w.get(name + ".bias")};
}

// A linear (or 1x1 conv) layer: weight [out, in] and a bias that exists iff the model uses biases. In an FP8
// encoder the weight is held as FP8 rows (w8) instead of w.
struct LinearWeights {
  Tensor w, b;
  ops::Fp8Rows w8;

  int64_t out_features() const { return w8.defined() ? w8.rows() : w.dim(0); }
};

LinearWeights load_linear(const WeightStore& w, const std::string& name) {
  const std::string bias = name + ".bias";
  return {w.get(name + ".weight"), w.has(bias) ? w.get(bias) : Tensor(), ops::Fp8Rows{}};
}

struct FeedForwardWeights {
  LinearWeights linear1, linear2;
};

FeedForwardWeights load_feed_forward(const WeightStore& w, const std::string& name) {
  return {load_linear(w, name + ".linear1"), load_linear(w, name + ".linear2")};
}

// A stride-2 (or 1) stage's length update: NeMo's calc_length with kernel 3, padding 1.
int64_t conv_out_length(int64_t len, int stride) { return stride == 1 ? len : (len + 2 - 3) / 2 + 1; }

// The relative positional table for positions max_rel..-max_rel on ctx's device in `dtype`: a view of a table
// the context keeps, made for a multiple of kPositionStep positions and made again only when a longer one is
// asked for. Made per run it cost milliseconds of host time at 45 s (1.15 M sines and cosines, a conversion,
// an upload), during which a GPU at small batches sat idle. A view of a longer table holds the same values:
// row r is position R - r whatever R is.
constexpr int64_t kPositionStep = 512;

Tensor position_table(ops::Context& ctx, int64_t max_rel, int d_model, DType dtype) {
  const std::string key = fmt::format("asr.relative_positions.{}.{}", d_model, dtype_name(dtype));
  Tensor table = ctx.kept(key);
  if (!table.defined() || (table.dim(0) - 1) / 2 < max_rel) {
    const int64_t r = (max_rel + kPositionStep - 1) / kPositionStep * kPositionStep;
    table = ops::to_context(ctx, ConformerEncoder::relative_positions(r, d_model), dtype);
    ctx.keep(key, table);
  }
  const int64_t r = (table.dim(0) - 1) / 2;
  return table.narrow0(r - max_rel, r + max_rel + 1);
}

}  // namespace

struct ConformerEncoder::Subsampling {
  // conv.0 (1 -> C, 3x3, stride 2); then per further stage: depthwise 3x3 stride 2 and pointwise 1x1.
  Tensor conv0_w, conv0_b;
  std::vector<std::array<Tensor, 4>> stages;  // dw_w, dw_b, pw_w, pw_b
  Tensor out_w, out_b;

  template <typename F> void for_each_weight(F&& f) {
    f(conv0_w), f(conv0_b), f(out_w), f(out_b);
    for (auto& stage : stages)
      for (auto& t : stage) f(t);
  }
};

struct ConformerEncoder::Layer {
  LayerNormWeights norm_ff1, norm_att, norm_conv, norm_ff2, norm_out;
  FeedForwardWeights ff1, ff2;
  LinearWeights q, k, v, out;
  Tensor pos_w, pos_bias_u, pos_bias_v;  // linear_pos never has a bias
  LinearWeights pw1, pw2;                // the conv module's pointwise convs, as [out, in] matrices
  Tensor dw_w, dw_b;                     // depthwise conv [d, kernel] with the batch norm folded in

  // The linear layers an FP8 encoder runs in FP8 (linear_pos is not: its input is the positional table).
  std::array<LinearWeights*, 10> fp8_linears() {
    return {&ff1.linear1, &ff1.linear2, &ff2.linear1, &ff2.linear2, &q, &k, &v, &out, &pw1, &pw2};
  }

  template <typename F> void for_each_weight(F&& f) {
    for (auto* n : {&norm_ff1, &norm_att, &norm_conv, &norm_ff2, &norm_out}) f(n->gamma), f(n->beta);
    for (auto* ff : {&ff1, &ff2}) f(ff->linear1.w), f(ff->linear1.b), f(ff->linear2.w), f(ff->linear2.b);
    for (auto* l : {&q, &k, &v, &out, &pw1, &pw2}) f(l->w), f(l->b);
    f(pos_w), f(pos_bias_u), f(pos_bias_v), f(dw_w), f(dw_b);
  }
};

ConformerEncoder::~ConformerEncoder() = default;
ConformerEncoder::ConformerEncoder(ConformerEncoder&&) noexcept = default;

ConformerEncoder::ConformerEncoder(const EncoderConfig& config, bool masked_subsampling, ops::AttentionWindow window,
                                   const WeightStore& w)
    : config_(config),
      masked_subsampling_(masked_subsampling),
      window_(window),
      subsampling_(std::make_unique<Subsampling>()) {
  STENO_CHECK(config.d_model % config.n_heads == 0, "encoder: n_heads {} must divide d_model {}", config.n_heads,
              config.d_model);
  const int stages = static_cast<int>(std::lround(std::log2(config.subsampling_factor)));
  STENO_CHECK(stages >= 1 && (1 << stages) == config.subsampling_factor,
              "encoder: dw_striding needs a power-of-two subsampling factor, got {}", config.subsampling_factor);
  const std::string pre = "encoder.pre_encode.";
  auto& sub = *subsampling_;
  sub.conv0_w = w.get(pre + "conv.0.weight");
  sub.conv0_b = w.get(pre + "conv.0.bias");
  for (int s = 1; s < stages; ++s) {
    const int dw = 3 * s - 1, pw = 3 * s;  // conv.2/conv.3, conv.5/conv.6, ...
    sub.stages.push_back({w.get(pre + "conv." + std::to_string(dw) + ".weight"),
                          w.get(pre + "conv." + std::to_string(dw) + ".bias"),
                          w.get(pre + "conv." + std::to_string(pw) + ".weight"),
                          w.get(pre + "conv." + std::to_string(pw) + ".bias")});
  }
  sub.out_w = w.get(pre + "out.weight");
  sub.out_b = w.get(pre + "out.bias");

  const int d = config.d_model, k = config.conv_kernel_size;
  for (int i = 0; i < config.n_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i) + ".";
    Layer L;
    L.norm_ff1 = load_norm(w, p + "norm_feed_forward1");
    L.norm_att = load_norm(w, p + "norm_self_att");
    L.norm_conv = load_norm(w, p + "norm_conv");
    L.norm_ff2 = load_norm(w, p + "norm_feed_forward2");
    L.norm_out = load_norm(w, p + "norm_out");
    L.ff1 = load_feed_forward(w, p + "feed_forward1");
    L.ff2 = load_feed_forward(w, p + "feed_forward2");
    const std::string a = p + "self_attn.";
    L.q = load_linear(w, a + "linear_q");
    L.k = load_linear(w, a + "linear_k");
    L.v = load_linear(w, a + "linear_v");
    L.out = load_linear(w, a + "linear_out");
    L.pos_w = w.get(a + "linear_pos.weight");
    L.pos_bias_u = w.get(a + "pos_bias_u");
    L.pos_bias_v = w.get(a + "pos_bias_v");
    const std::string c = p + "conv.";
    L.pw1 = load_linear(w, c + "pointwise_conv1");
    L.pw1.w = L.pw1.w.reshape({2 * d, d});
    L.pw2 = load_linear(w, c + "pointwise_conv2");
    L.pw2.w = L.pw2.w.reshape({d, d});
    // Fold BatchNorm (running statistics) into the depthwise conv: one op less per layer at run time.
    L.dw_w = w.get(c + "depthwise_conv.weight").reshape({d, k}).clone();
    L.dw_b = w.has(c + "depthwise_conv.bias") ? w.get(c + "depthwise_conv.bias").clone() : Tensor();
    const std::string bn = c + "batch_norm.";
    ops::fold_batch_norm(L.dw_w, L.dw_b, w.get(bn + "running_mean"), w.get(bn + "running_var"),
                         w.get(bn + "weight"), w.get(bn + "bias"), kNormEps);
    layers_.push_back(std::move(L));
  }
}

ConformerEncoder::ConformerEncoder(const ConformerEncoder& other, std::unique_ptr<Subsampling> sub,
                                   std::vector<Layer> layers)
    : config_(other.config_),
      masked_subsampling_(other.masked_subsampling_),
      window_(other.window_),
      subsampling_(std::move(sub)),
      layers_(std::move(layers)) {}

ConformerEncoder ConformerEncoder::to_device(ops::Context& ctx, DType dtype, bool fp8_linears) const {
  STENO_CHECK(!ctx.device().is_cpu() || dtype == DType::kF32, "encoder: the CPU computes in f32, not {}",
              dtype_name(dtype));
  STENO_CHECK(!fp8_linears || dtype == DType::kF16 || dtype == DType::kBF16,
              "encoder: FP8 linear layers run beside f16 or bf16 activations, not {}", dtype_name(dtype));
  if (fp8_linears && !ops::fp8_supported(ctx))
    fail(ErrorCode::kUnimplemented, "encoder: FP8 needs a CUDA device of compute capability 8.9 or later, not {}",
         ctx.device().str());
  Allocator& alloc = ctx.device().is_cpu() ? static_cast<Allocator&>(default_cpu_allocator())
                                           : steno::cuda::weight_allocator(ctx.device().index);
  auto place = [&](Tensor& t) {
    if (t.defined()) t = ops::place(ctx, t, dtype, alloc);
  };
  auto sub = std::make_unique<Subsampling>(*subsampling_);
  sub->for_each_weight(place);
  std::vector<Layer> layers = layers_;
  for (auto& layer : layers) {
    if (fp8_linears)
      for (LinearWeights* lin : layer.fp8_linears()) {
        lin->w8 = ops::quantize_weight(ctx, lin->w, alloc);  // from the f32 weight: one rounding, to FP8
        lin->w = Tensor();
      }
    layer.for_each_weight(place);
  }
  return ConformerEncoder(*this, std::move(sub), std::move(layers));
}

ConformerEncoder ConformerEncoder::with_attention_window(ops::AttentionWindow window) const {
  ConformerEncoder e(*this, std::make_unique<Subsampling>(*subsampling_), layers_);
  e.window_ = window;
  return e;
}

DType ConformerEncoder::dtype() const { return subsampling_->conv0_w.dtype(); }
Device ConformerEncoder::device() const { return subsampling_->conv0_w.device(); }
bool ConformerEncoder::fp8_linears() const { return !layers_.empty() && layers_.front().q.w8.defined(); }

int64_t ConformerEncoder::output_length(int64_t feature_frames) const {
  int64_t len = feature_frames;
  for (int f = config_.subsampling_factor; f > 1; f /= 2) len = conv_out_length(len, 2);
  return len;
}

std::vector<std::vector<int64_t>> ConformerEncoder::frame_counts(const std::vector<int64_t>& feature_lengths) const {
  std::vector<std::vector<int64_t>> counts = {feature_lengths};
  for (int f = config_.subsampling_factor; f > 1; f /= 2) {
    std::vector<int64_t> next = counts.back();
    for (int64_t& len : next) len = conv_out_length(len, 2);
    counts.push_back(std::move(next));
  }
  return counts;
}

Tensor ConformerEncoder::relative_positions(int64_t max_relative, int d_model) {
  // NeMo's RelPositionalEncoding.create_pe in fp32: rows for positions +R .. -R.
  const int64_t rows = 2 * max_relative + 1;
  Tensor pe = Tensor::empty({rows, d_model});
  float* p = pe.data<float>();
  const float neg_log_ratio = static_cast<float>(-(std::log(10000.0) / d_model));
  for (int i = 0; i < d_model; i += 2) {
    const float div = std::exp(static_cast<float>(i) * neg_log_ratio);
    for (int64_t r = 0; r < rows; ++r) {
      const float angle = static_cast<float>(max_relative - r) * div;
      p[r * d_model + i] = std::sin(angle);
      if (i + 1 < d_model) p[r * d_model + i + 1] = std::cos(angle);
    }
  }
  return pe;
}

Tensor ConformerEncoder::subsample(ops::Context& ctx, const Tensor& features, std::vector<int64_t>& lengths) const {
  const auto& sub = *subsampling_;
  const int64_t batch = features.dim(0);
  const bool mask = masked_subsampling_;
  const DType dt = features.dtype();
  Tensor x = features.reshape({batch, 1, features.dim(1), features.dim(2)});
  auto conv = [&](const Tensor& in, const Tensor& w, const Tensor& b, int stride, int pad, int groups) {
    const int64_t h = (in.dim(2) + 2 * pad - w.dim(2)) / stride + 1;
    const int64_t wd = (in.dim(3) + 2 * pad - w.dim(3)) / stride + 1;
    Tensor y = ctx.scratch({batch, w.dim(0), h, wd}, dt);
    ops::conv2d(ctx, in, w, b, y, stride, stride, pad, pad, groups);
    return y;
  };
  auto shrink = [&] {
    for (auto& len : lengths) len = conv_out_length(len, 2);
  };
  auto pointwise = [&](const Tensor& pw_w, const Tensor& pw_b) {
    x = conv(x, pw_w, pw_b, 1, 0, 1);
    if (mask) ops::zero_padded_frames(ctx, x, 2, lengths);
    ops::relu(ctx, x, x);
  };

  size_t next_stage = 0;
  if (sub.stages.empty()) {  // factor 2: conv.0 alone
    if (mask) {
      x = ops::clone(ctx, x);
      ops::zero_padded_frames(ctx, x, 2, lengths);
    }
    x = conv(x, sub.conv0_w, sub.conv0_b, 2, 1, 1);
    shrink();
    if (mask) ops::zero_padded_frames(ctx, x, 2, lengths);
    ops::relu(ctx, x, x);
  } else {
    // conv.0, its ReLU and the first depthwise conv in one op (on CUDA one kernel: conv.0's output, the
    // encoder's largest activation, is never written), then that stage's pointwise conv.
    const auto& [dw_w, dw_b, pw_w, pw_b] = sub.stages.front();
    ops::StemFrames frames;
    frames.in = lengths;
    shrink();
    frames.mid = lengths;
    shrink();
    frames.out = lengths;
    const auto half = [](int64_t n) { return conv_out_length(n, 2); };
    Tensor y = ctx.scratch({batch, sub.conv0_w.dim(0), half(half(x.dim(2))), half(half(x.dim(3)))}, dt);
    ops::subsampling_stem(ctx, x, sub.conv0_w, sub.conv0_b, dw_w, dw_b, mask ? &frames : nullptr, y);
    x = y;
    pointwise(pw_w, pw_b);
    next_stage = 1;
  }
  for (size_t i = next_stage; i < sub.stages.size(); ++i) {
    const auto& [dw_w, dw_b, pw_w, pw_b] = sub.stages[i];
    x = conv(x, dw_w, dw_b, 2, 1, static_cast<int>(x.dim(1)));
    shrink();
    if (mask) ops::zero_padded_frames(ctx, x, 2, lengths);
    pointwise(pw_w, pw_b);
  }
  // [B, C, T, F] -> [B, T, C*F] (channel-major flattening), then the output projection.
  const int64_t c = x.dim(1), t = x.dim(2), f = x.dim(3);
  Tensor flat = ctx.scratch({batch, t, c * f}, dt);
  ops::merge_channels(ctx, x, flat);
  Tensor out = ctx.scratch({batch, t, sub.out_w.dim(0)}, dt);
  ops::linear(ctx, flat, sub.out_w, sub.out_b, out);
  return out;
}

void ConformerEncoder::run_layer(ops::Context& ctx, const Layer& L, Tensor& x, const Tensor& pos,
                                 const std::vector<int64_t>& lengths) const {
  const int64_t batch = x.dim(0), t = x.dim(1), d = x.dim(2), rows = batch * t;
  const DType dt = x.dtype();
  const int64_t ff_width = L.ff1.linear1.out_features();
  // In an FP8 encoder every linear layer's input is FP8 rows: the norms write them directly, the feed-forward's
  // SiLU writes them, and the attention's and conv module's outputs are quantized before their projections.
  const bool fp8 = L.q.w8.defined();
  // h: the normalised input of the block at hand (h8 in FP8); r: that block's output, added to the residual
  // stream x by the op that also normalises x for the next block (ops::add_layer_norm, one pass on CUDA).
  Tensor h = fp8 ? Tensor() : ctx.scratch({batch, t, d}, dt), r = ctx.scratch({batch, t, d}, dt);
  ops::Fp8Rows h8, in8;  // in8: a 16-bit activation's FP8 rows, made just before the linear layer reading them
  if (fp8) h8 = ops::fp8_scratch(ctx, rows, d), in8 = ops::fp8_scratch(ctx, rows, std::max(d, ff_width));
  auto normalize = [&](const Tensor& residual, float alpha, const LayerNormWeights& n) {
    if (fp8)
      ops::add_layer_norm_fp8(ctx, x, residual, alpha, n.gamma, n.beta, kNormEps, h8);
    else if (residual.defined())
      ops::add_layer_norm(ctx, x, residual, alpha, n.gamma, n.beta, kNormEps, h);
    else
      ops::layer_norm(ctx, x, n.gamma, n.beta, kNormEps, h);
  };
  auto linear_on_h = [&](const LinearWeights& lin, Tensor& out) {
    if (fp8)
      ops::linear_fp8(ctx, h8, lin.w8, lin.b, out);
    else
      ops::linear(ctx, h, lin.w, lin.b, out);
  };
  // A linear layer on a 16-bit activation; `silu` applies SiLU to it first (in place without FP8).
  auto linear_on = [&](Tensor& in, bool silu, const LinearWeights& lin, Tensor& out) {
    if (!fp8) {
      if (silu) ops::silu(ctx, in, in);
      ops::linear(ctx, in, lin.w, lin.b, out);
      return;
    }
    const int64_t k = in.dim(-1);
    ops::Fp8Rows q8{in8.values.reshape({-1}).narrow0(0, rows * k).reshape({rows, k}), in8.scales};
    if (silu)
      ops::silu_quantize_rows(ctx, in, q8);
    else
      ops::quantize_rows(ctx, in, q8);
    ops::linear_fp8(ctx, q8, lin.w8, lin.b, out);
  };
  Tensor wide = ctx.scratch({batch, t, ff_width}, dt);
  auto feed_forward = [&](const FeedForwardWeights& ff) {
    linear_on_h(ff.linear1, wide);
    linear_on(wide, true, ff.linear2, r);
  };

  normalize(Tensor(), 0.0f, L.norm_ff1);
  feed_forward(L.ff1);
  normalize(r, 0.5f, L.norm_att);  // macaron: half-step

  // Relative-position self-attention.
  Tensor q = ctx.scratch({batch, t, d}, dt), k = ctx.scratch({batch, t, d}, dt), v = ctx.scratch({batch, t, d}, dt);
  linear_on_h(L.q, q);
  linear_on_h(L.k, k);
  linear_on_h(L.v, v);
  Tensor p = ctx.scratch({pos.dim(0), d}, dt);
  ops::linear(ctx, pos, L.pos_w, Tensor(), p);
  Tensor att = ctx.scratch({batch, t, d}, dt);
  ops::rel_pos_attention(ctx, q, k, v, p, L.pos_bias_u, L.pos_bias_v, lengths, window_, att);
  linear_on(att, false, L.out, r);
  normalize(r, 1.0f, L.norm_conv);

  // Convolution module: pointwise -> GLU -> (mask) -> depthwise with folded BN -> SiLU -> pointwise.
  Tensor glu_in = ctx.scratch({batch, t, 2 * d}, dt);
  linear_on_h(L.pw1, glu_in);
  ops::gated_depthwise_silu(ctx, glu_in, L.dw_w, L.dw_b, (config_.conv_kernel_size - 1) / 2, lengths, att);
  linear_on(att, false, L.pw2, r);
  normalize(r, 1.0f, L.norm_ff2);

  feed_forward(L.ff2);
  ops::add_layer_norm(ctx, x, r, 0.5f, L.norm_out.gamma, L.norm_out.beta, kNormEps, x);
}

EncoderOutput ConformerEncoder::forward(ops::Context& ctx, const Tensor& features,
                                        const std::vector<int64_t>& lengths, bool keep_layer_outputs) const {
  std::vector<int64_t> sub_lengths = lengths;
  const Tensor x = pre_encode(ctx, features, sub_lengths);
  EncoderOutput out = encode(ctx, x, sub_lengths, keep_layer_outputs);
  if (keep_layer_outputs) out.pre_encode = ops::clone(ctx, x);
  return out;
}

Tensor ConformerEncoder::pre_encode(ops::Context& ctx, const Tensor& features, std::vector<int64_t>& lengths) const {
  STENO_CHECK(features.rank() == 3 && features.dim(2) == config_.feat_in,
              "encoder: features must be [B, frames, {}], got {}", config_.feat_in, shape_str(features.shape()));
  STENO_CHECK(static_cast<int64_t>(lengths.size()) == features.dim(0), "encoder: {} lengths for a batch of {}",
              lengths.size(), features.dim(0));
  STENO_CHECK(features.device() == device() && features.dtype() == dtype(),
              "encoder: features are {} but the encoder runs on {} in {}", features.str(), device().str(),
              dtype_name(dtype()));
  return subsample_in_chunks(ctx, features, lengths);
}

namespace {
// Subsampling in time chunks (long audio on the CPU): output frames per chunk, and the output frames of context
// on each side that are computed and dropped. Three stride-2 3x3 convolutions see 15 input frames, under 2 output
// frames, so 8 frames of context make every kept frame what the whole recording's computation gives.
constexpr int64_t kSubsampleChunk = 2048;
constexpr int64_t kSubsampleContext = 8;
}  // namespace

// NeMo's long-form setting chunks the subsampling convolutions too (change_subsampling_conv_chunking_factor): on
// an hour of audio the first convolution's output alone would be 128 channels x 180,000 x 40 floats. Here one
// clip on the CPU is subsampled in chunks of kSubsampleChunk output frames, each with context on both sides that
// starts at a multiple of the subsampling factor (so every stride meets the same frames), and the context is cut
// off; a clip up to kSubsampleChunk + 2 x kSubsampleContext frames (about 165 s) takes the one-piece path.
Tensor ConformerEncoder::subsample_in_chunks(ops::Context& ctx, const Tensor& features,
                                             std::vector<int64_t>& lengths) const {
  const int64_t frames = features.dim(1), mels = features.dim(2);
  const int64_t factor = config_.subsampling_factor;
  const int64_t out_frames = output_length(frames);
  if (!ctx.device().is_cpu() || features.dim(0) != 1 || out_frames <= kSubsampleChunk + 2 * kSubsampleContext)
    return subsample(ctx, features, lengths);
  const int64_t length = lengths[0];
  const Tensor rows = features.reshape({frames, mels});
  Tensor out;
  for (int64_t o0 = 0; o0 < out_frames; o0 += kSubsampleChunk) {
    const int64_t o1 = std::min(out_frames, o0 + kSubsampleChunk);
    const int64_t in0 = std::max<int64_t>(0, o0 - kSubsampleContext) * factor;
    const int64_t in1 = std::min(frames, (o1 + kSubsampleContext) * factor);
    const Tensor chunk = rows.narrow0(in0, in1).reshape({1, in1 - in0, mels});
    std::vector<int64_t> chunk_lengths = {std::clamp<int64_t>(length - in0, 0, in1 - in0)};
    const Tensor y = subsample(ctx, chunk, chunk_lengths);  // [1, t, d_model]
    const int64_t d = y.dim(2), skip = o0 - in0 / factor;
    if (!out.defined()) out = ctx.scratch({1, out_frames, d}, y.dtype());
    Tensor dst = out.reshape({out_frames, d}).narrow0(o0, o1);
    ops::copy(ctx, y.reshape({y.dim(1), d}).narrow0(skip, skip + (o1 - o0)), dst);
  }
  lengths[0] = output_length(length);
  return out;
}

EncoderOutput ConformerEncoder::encode(ops::Context& ctx, const Tensor& embeddings,
                                       const std::vector<int64_t>& lengths, bool keep_layer_outputs) const {
  STENO_CHECK(embeddings.rank() == 3 && embeddings.dim(2) == config_.d_model,
              "encoder: embeddings must be [B, T, {}], got {}", config_.d_model, shape_str(embeddings.shape()));
  STENO_CHECK(static_cast<int64_t>(lengths.size()) == embeddings.dim(0), "encoder: {} lengths for a batch of {}",
              lengths.size(), embeddings.dim(0));
  STENO_CHECK(embeddings.device() == device() && embeddings.dtype() == dtype(),
              "encoder: embeddings are {} but the encoder runs on {} in {}", embeddings.str(), device().str(),
              dtype_name(dtype()));
  EncoderOutput out;
  out.lengths = lengths;
  Tensor x = ops::clone(ctx, embeddings);  // scaled and rewritten in place below; the caller keeps its copy
  if (config_.xscaling) ops::scale(ctx, x, std::sqrt(static_cast<float>(config_.d_model)));

  // On CUDA the layers run on frames padded to a multiple of 8 (zeros past every item's length, as batch padding
  // is): cuBLASLt's Hopper GEMM kernels need every extent a multiple of 16 bytes, and an odd frame count sent
  // the attention products and, at batch 1, every linear to its slow pre-Hopper kernels. The padding is masked
  // like any batch padding, so valid frames come out the same; the output is trimmed back.
  const int64_t frames = x.dim(1);
  if (!ctx.device().is_cpu() && frames % 8 != 0) {
    Tensor padded = ctx.scratch({x.dim(0), (frames + 7) / 8 * 8, x.dim(2)}, x.dtype());
    ops::copy_frames(ctx, x, padded);
    x = padded;
  }
  const int64_t t = x.dim(1);
  const auto& win = window_;
  const int64_t max_rel = (win.left < 0 || win.right < 0) ? std::max<int64_t>(t - 1, 0)
                                                          : std::max(win.left, win.right);
  const Tensor pos = position_table(ctx, max_rel, config_.d_model, x.dtype());
  for (const auto& layer : layers_) {
    run_layer(ctx, layer, x, pos, out.lengths);
    if (keep_layer_outputs) out.layer_outputs.push_back(ops::clone(ctx, x));
  }
  if (t != frames) {
    Tensor trimmed = ctx.scratch({x.dim(0), frames, x.dim(2)}, x.dtype());
    ops::copy_frames(ctx, x, trimmed);
    x = trimmed;
  }
  out.encoded = x;
  return out;
}

}  // namespace steno::asr
