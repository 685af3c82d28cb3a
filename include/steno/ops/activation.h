// Activations and softmax. Unless noted, y may alias x.
#pragma once

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

void relu(Context& ctx, const Tensor& x, Tensor& y);
void silu(Context& ctx, const Tensor& x, Tensor& y);  // x * sigmoid(x), a.k.a. Swish
void sigmoid(Context& ctx, const Tensor& x, Tensor& y);  // 1 / (1 + exp(-x))
// Gated linear unit over the last dimension: x [..., 2C] -> y [..., C], y = x[..., :C] * sigmoid(x[..., C:]).
// y must not alias x.
void glu(Context& ctx, const Tensor& x, Tensor& y);
// Softmax over the last dimension, numerically stable (max subtracted).
void softmax(Context& ctx, const Tensor& x, Tensor& y);

}  // namespace steno::ops
