// Normalisations.
#pragma once

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

// y = (x - mean) / sqrt(var + eps) * gamma + beta over the last dimension D (biased variance, as
// torch.nn.LayerNorm). x, y [..., D]; gamma, beta [D]. y may alias x.
void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y);

// Inference batch norm with running statistics on channel-last data: x, y [..., C]; the rest [C]. y may alias x.
void batch_norm(Context& ctx, const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                const Tensor& beta, float eps, Tensor& y);

// Folds an inference batch norm that follows a convolution into that convolution's weights, in place:
// s = gamma / sqrt(var + eps); w[c, ...] *= s[c]; bias[c] = (bias[c] - mean[c]) * s[c] + beta[c].
// w [C, ...] (CPU); `bias` [C] is created (zeros) when undefined. Exact up to fp32 rounding.
void fold_batch_norm(Tensor& w, Tensor& bias, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                     const Tensor& beta, float eps);

}  // namespace steno::ops
