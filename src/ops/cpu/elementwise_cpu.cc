// Elementwise glue: residual adds, scaling, padding masks.
#include <algorithm>
#include <cstring>

#include "cpu/kernels.h"
#include "cpu/simd.h"

namespace steno::ops::cpu {
namespace {

constexpr int64_t kElementGrain = 32768;  // elements per parallel chunk

STENO_SIMD_CLONES void add_row(const float* a, const float* b, float alpha, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + alpha * b[i];
}

STENO_SIMD_CLONES void add_row_1(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

STENO_SIMD_CLONES void scale_row(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace

void add(Context& ctx, const Tensor& a, const Tensor& b, float alpha, Tensor& y) {
  const float* ap = a.data<float>();
  const float* bp = b.data<float>();
  float* yp = y.data<float>();
  ctx.pool().parallel_for(0, y.numel(), kElementGrain, [&](int64_t i0, int64_t i1) {
    if (alpha == 1.0f)  // exact a + b, as torch computes it
      add_row_1(ap + i0, bp + i0, yp + i0, i1 - i0);
    else
      add_row(ap + i0, bp + i0, alpha, yp + i0, i1 - i0);
  });
}

void scale(Context& ctx, Tensor& x, float s) {
  float* xp = x.data<float>();
  ctx.pool().parallel_for(0, x.numel(), kElementGrain,
                          [&](int64_t i0, int64_t i1) { scale_row(xp + i0, s, i1 - i0); });
}

void zero_padded_frames(Context& ctx, Tensor& x, int time_axis, const std::vector<int64_t>& lengths) {
  const int64_t batch = x.dim(0), steps = x.dim(time_axis);
  int64_t outer = 1, inner = 1;
  for (int d = 1; d < time_axis; ++d) outer *= x.dim(d);
  for (int d = time_axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  float* xp = x.data<float>();
  // One task per (b, outer) slab; each clears the contiguous tail [length, T) x inner.
  ctx.pool().parallel_for(0, batch * outer, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(steps * inner, 1)),
                          [&](int64_t s0, int64_t s1) {
                            for (int64_t s = s0; s < s1; ++s) {
                              const int64_t len = lengths[s / outer];
                              float* slab = xp + s * steps * inner;
                              std::memset(slab + len * inner, 0,
                                          static_cast<size_t>((steps - len) * inner) * sizeof(float));
                            }
                          });
}

}  // namespace steno::ops::cpu
