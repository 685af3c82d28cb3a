// Layer norm, inference batch norm and batch-norm folding.
#include <algorithm>
#include <cmath>

#include "cpu/kernels.h"
#include "cpu/simd.h"

namespace steno::ops::cpu {
namespace {

// Two passes over the row for the statistics (mean, then squared deviations): as accurate as torch's Welford
// for rows of any offset, and both passes vectorise.
STENO_SIMD_CLONES void layer_norm_row(const float* x, const float* gamma, const float* beta, float eps, float* y,
                                      int64_t n) {
  const float mean = row_sum(x, n) / static_cast<float>(n);
  const float var = row_sum_sq_dev(x, n, mean) / static_cast<float>(n);
  const float rstd = 1.0f / std::sqrt(var + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
}

STENO_SIMD_CLONES void affine_row(const float* x, const float* scale, const float* shift, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale[i] + shift[i];
}

}  // namespace

void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) {
  const int64_t d = x.dim(-1);
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  const float* xp = x.data<float>();
  const float* gp = gamma.data<float>();
  const float* bp = beta.data<float>();
  float* yp = y.data<float>();
  ctx.pool().parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(d, 1)),
                          [&](int64_t r0, int64_t r1) {
                            for (int64_t r = r0; r < r1; ++r) layer_norm_row(xp + r * d, gp, bp, eps, yp + r * d, d);
                          });
}

void batch_norm(Context& ctx, const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                const Tensor& beta, float eps, Tensor& y) {
  const int64_t c = x.dim(-1);
  const int64_t rows = c == 0 ? 0 : x.numel() / c;
  // y = x * s + (beta - mean * s), s = gamma / sqrt(var + eps): one multiply-add per element.
  Tensor coef = ctx.scratch({2, c});
  float* scale = coef.data<float>();
  float* shift = scale + c;
  const float* mp = mean.data<float>();
  const float* vp = var.data<float>();
  const float* gp = gamma.data<float>();
  const float* bp = beta.data<float>();
  for (int64_t i = 0; i < c; ++i) {
    scale[i] = gp[i] / std::sqrt(vp[i] + eps);
    shift[i] = bp[i] - mp[i] * scale[i];
  }
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  ctx.pool().parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(c, 1)),
                          [&](int64_t r0, int64_t r1) {
                            for (int64_t r = r0; r < r1; ++r) affine_row(xp + r * c, scale, shift, yp + r * c, c);
                          });
}

void fold_batch_norm(Tensor& w, Tensor& bias, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                     const Tensor& beta, float eps) {
  const int64_t c = w.dim(0);
  const int64_t per = c == 0 ? 0 : w.numel() / c;
  if (!bias.defined()) bias = Tensor::zeros({c});
  float* wp = w.data<float>();
  float* bp = bias.data<float>();
  const float* mp = mean.data<float>();
  const float* vp = var.data<float>();
  const float* gp = gamma.data<float>();
  const float* betap = beta.data<float>();
  for (int64_t i = 0; i < c; ++i) {
    const float s = gp[i] / std::sqrt(vp[i] + eps);
    for (int64_t j = 0; j < per; ++j) wp[i * per + j] *= s;
    bp[i] = (bp[i] - mp[i]) * s + betap[i];
  }
}

}  // namespace steno::ops::cpu
