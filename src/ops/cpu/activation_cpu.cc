// Activations and softmax: vectorised row kernels, parallel over chunks of rows or elements.
#include <algorithm>

#include "cpu/kernels.h"
#include "cpu/simd.h"

namespace steno::ops::cpu {
namespace {

constexpr int64_t kElementGrain = 32768;  // elements per parallel chunk

STENO_SIMD_CLONES void relu_row(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

STENO_SIMD_CLONES void silu_row(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const vf8 v = load8(x + i);
    store8(y + i, v / (1.0f + exp8(-v)));
  }
  for (; i < n; ++i) y[i] = x[i] / (1.0f + fast_exp(-x[i]));
}

STENO_SIMD_CLONES void glu_row(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(y + i, load8(a + i) / (1.0f + exp8(-load8(b + i))));
  for (; i < n; ++i) y[i] = a[i] / (1.0f + fast_exp(-b[i]));
}

STENO_SIMD_CLONES void softmax_row(const float* x, float* y, int64_t n) {
  const float m = row_max(x, n);
  const float inv = 1.0f / row_exp_sum(x, y, n, m);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

template <typename RowFn>
void map_elements(Context& ctx, const Tensor& x, Tensor& y, int64_t grain, RowFn fn) {
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  ctx.pool().parallel_for(0, x.numel(), grain, [&](int64_t b, int64_t e) { fn(xp + b, yp + b, e - b); });
}

}  // namespace

STENO_SIMD_CLONES void sigmoid_row(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(y + i, sigmoid8(load8(x + i)));
  for (; i < n; ++i) y[i] = fast_sigmoid(x[i]);
}

STENO_SIMD_CLONES void tanh_row(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(y + i, tanh8(load8(x + i)));
  for (; i < n; ++i) y[i] = fast_tanh(x[i]);
}

void relu(Context& ctx, const Tensor& x, Tensor& y) { map_elements(ctx, x, y, kElementGrain, relu_row); }

void silu(Context& ctx, const Tensor& x, Tensor& y) { map_elements(ctx, x, y, kElementGrain, silu_row); }

void sigmoid(Context& ctx, const Tensor& x, Tensor& y) { map_elements(ctx, x, y, kElementGrain, sigmoid_row); }

void glu(Context& ctx, const Tensor& x, Tensor& y) {
  const int64_t c = y.dim(-1);
  const int64_t rows = c == 0 ? 0 : y.numel() / c;
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  ctx.pool().parallel_for(0, rows, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(c, 1)),
                          [&](int64_t r0, int64_t r1) {
                            for (int64_t r = r0; r < r1; ++r)
                              glu_row(xp + r * 2 * c, xp + r * 2 * c + c, yp + r * c, c);
                          });
}

void softmax(Context& ctx, const Tensor& x, Tensor& y) {
  const int64_t n = x.dim(-1);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  ctx.pool().parallel_for(0, rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)),
                          [&](int64_t r0, int64_t r1) {
                            for (int64_t r = r0; r < r1; ++r) softmax_row(xp + r * n, yp + r * n, n);
                          });
}

}  // namespace steno::ops::cpu
