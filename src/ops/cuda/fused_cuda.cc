// Fused ops on CUDA: one kernel each (fused.cu) where the shape allows, else the plain ops' kernels in sequence;
// $STENO_FUSED_OPS=0 always takes the plain ops (the benchmarks' side-by-side arm).
#include <cstdlib>
#include <string_view>

#include "check.h"
#include "fused_launch.h"
#include "kernels.h"
#include "steno/core/cuda.h"

namespace steno::ops::cuda {

bool fused_ops_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("STENO_FUSED_OPS");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return enabled;
}

void add_layer_norm(Context& ctx, Tensor& x, const Tensor& h, float alpha, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor& y) {
  detail::check_same_dtype("add_layer_norm", {&x, &h, &gamma, &beta, &y});
  const int64_t d = x.dim(-1);
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  if (fused_ops_enabled() && launch_add_layer_norm(dt_of(x), x.raw(), h.raw(), alpha, gamma.raw(), beta.raw(), eps,
                                                   y.raw(), rows, d, stream_of(ctx))) {
    check_launch("add_layer_norm");
    return;
  }
  cuda::add(ctx, x, h, alpha, x);
  cuda::layer_norm(ctx, x, gamma, beta, eps, y);
}

void gated_depthwise_silu(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, int pad_left,
                          const std::vector<int64_t>& lengths, Tensor& y) {
  detail::check_same_dtype("gated_depthwise_silu", {&x, &w, &bias, &y});
  const int64_t batch = x.dim(0), steps = x.dim(1), channels = y.dim(2), taps = w.dim(1);
  if (fused_ops_enabled()) {
    const Tensor lens = upload_lengths(ctx, lengths);
    if (launch_gated_depthwise_silu(dt_of(x), x.raw(), w.raw(), bias.defined() ? bias.raw() : nullptr,
                                    lens.data<int32_t>(), y.raw(), batch, steps, channels, taps, pad_left,
                                    stream_of(ctx))) {
      check_launch("gated_depthwise_silu");
      return;
    }
  }
  Tensor gated = ctx.scratch({batch, steps, channels}, x.dtype());
  cuda::glu(ctx, x, gated);
  cuda::zero_padded_frames(ctx, gated, 1, lengths);
  cuda::depthwise_conv1d(ctx, gated, w, bias, y, pad_left, static_cast<int>(taps - 1 - pad_left));
  cuda::silu(ctx, y, y);
}

}  // namespace steno::ops::cuda
