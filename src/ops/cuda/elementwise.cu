// Elementwise glue kernels: add, scale, zero_padded_frames, and the C = beta*C (+ bias) fill that the GEMMs use
// when k = 0. Memory-bound: grid-stride loops, 16-byte vector loads when every pointer allows them.
#include <algorithm>
#include <cstdint>

#include "launch_common.cuh"
#include "elementwise_launch.h"

namespace steno::ops::cuda {
namespace {

// y = a + alpha * b. y may alias a or b: every element is read and written by one thread.
template <typename T>
__global__ void add_kernel(const T* a, const T* b, float alpha, T* y, int64_t n, bool vec) {
  int64_t done = 0;
  if (vec) {
    constexpr int V = Pack<T>::kSize;
    const int64_t packs = n / V;
    for (int64_t i = thread_index(); i < packs; i += thread_stride()) {
      const Pack<T> pa = reinterpret_cast<const Pack<T>*>(a)[i];
      const Pack<T> pb = reinterpret_cast<const Pack<T>*>(b)[i];
      Pack<T> py;
#pragma unroll
      for (int j = 0; j < V; ++j) py.v[j] = from_f32<T>(to_f32(pa.v[j]) + alpha * to_f32(pb.v[j]));
      reinterpret_cast<Pack<T>*>(y)[i] = py;
    }
    done = packs * V;
  }
  for (int64_t i = done + thread_index(); i < n; i += thread_stride())
    y[i] = from_f32<T>(to_f32(a[i]) + alpha * to_f32(b[i]));
}

template <typename T>
__global__ void scale_kernel(T* x, float s, int64_t n, bool vec) {
  int64_t done = 0;
  if (vec) {
    constexpr int V = Pack<T>::kSize;
    const int64_t packs = n / V;
    for (int64_t i = thread_index(); i < packs; i += thread_stride()) {
      Pack<T> p = reinterpret_cast<const Pack<T>*>(x)[i];
#pragma unroll
      for (int j = 0; j < V; ++j) p.v[j] = from_f32<T>(to_f32(p.v[j]) * s);
      reinterpret_cast<Pack<T>*>(x)[i] = p;
    }
    done = packs * V;
  }
  for (int64_t i = done + thread_index(); i < n; i += thread_stride()) x[i] = from_f32<T>(to_f32(x[i]) * s);
}

// x viewed as [batch, outer, steps, inner]: element (b, o, t, i) becomes 0 when t >= lengths[b]. Only padded
// elements are written; nothing is read from x.
template <typename T>
__global__ void zero_padded_kernel(T* x, const int32_t* lengths, int64_t outer, int64_t steps, int64_t inner,
                                   int64_t n) {
  const int64_t per_batch = outer * steps * inner;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int64_t t = (i / inner) % steps;
    if (t >= lengths[i / per_batch]) x[i] = from_f32<T>(0.0f);
  }
}

// c [rows, cols] with leading dimension ld: c = beta * c + bias (bias [cols] or null). beta == 0 does not read c,
// which may hold NaN (BLAS semantics).
template <typename T>
__global__ void scale_matrix_kernel(T* c, int64_t rows, int64_t cols, int64_t ld, float beta, const T* bias) {
  const int64_t n = rows * cols;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int64_t r = i / cols, j = i % cols;
    T* p = c + r * ld + j;
    const float v = beta == 0.0f ? 0.0f : beta * to_f32(*p);
    *p = from_f32<T>(bias != nullptr ? v + to_f32(bias[j]) : v);
  }
}

}  // namespace

// ---- launchers (declared in elementwise_launch.h) ----

void launch_add(Dt dt, const void* a, const void* b, float alpha, void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const bool vec = aligned16(a) && aligned16(b) && aligned16(y);
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b), alpha,
                                                        static_cast<T*>(y), n, vec);
  });
}

void launch_scale(Dt dt, void* x, float s, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(x), s, n, aligned16(x));
  });
}

void launch_zero_padded_frames(Dt dt, void* x, const int32_t* lengths, int64_t batch, int64_t outer, int64_t steps,
                               int64_t inner, cudaStream_t stream) {
  const int64_t n = batch * outer * steps * inner;
  if (n == 0) return;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    zero_padded_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(x), lengths, outer, steps, inner, n);
  });
}

void launch_scale_matrix(Dt dt, void* c, int64_t rows, int64_t cols, int64_t ld, float beta, const void* bias,
                         cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    scale_matrix_kernel<T><<<grid_for(rows * cols), kThreads, 0, stream>>>(static_cast<T*>(c), rows, cols, ld, beta,
                                                                          static_cast<const T*>(bias));
  });
}

}  // namespace steno::ops::cuda
