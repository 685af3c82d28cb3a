// Fused ops: chains of the encoder's memory-bound glue done in one pass over the activations. Each is defined as
// the chain of plain ops it replaces (and is exactly that chain on the CPU); on CUDA it is one kernel, so the
// intermediate tensors are never written. $STENO_FUSED_OPS=0 makes CUDA run the plain chain instead (the
// benchmarks' side-by-side arm).
#pragma once

#include <cstdint>
#include <vector>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

// A residual step and the LayerNorm that follows it (the Conformer layer's joints):
//   x = x + alpha * h          (rounded to x's dtype, as ops::add)
//   y = layer_norm(x, gamma, beta, eps)
// x, h, y [..., D]; gamma, beta [D]. y may alias x (then only the norm is kept), never h.
void add_layer_norm(Context& ctx, Tensor& x, const Tensor& h, float alpha, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor& y);

// The Conformer convolution module's middle, between its two pointwise convolutions:
//   g = glu(x)                            x [B, T, 2C] -> [B, T, C] (first half * sigmoid(second half))
//   g[b, t, :] = 0 for t >= lengths[b]    (the padding mask)
//   y = silu(depthwise_conv1d(g, w, bias, pad_left, K - 1 - pad_left))
// w [C, K] (a batch norm folded in), bias [C] or undefined, y [B, T, C]; lengths has B entries in [0, T].
// The same frames in and out: pad_left + pad_right = K - 1.
void gated_depthwise_silu(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, int pad_left,
                          const std::vector<int64_t>& lengths, Tensor& y);

}  // namespace steno::ops
