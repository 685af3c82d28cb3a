// Dtype conversion and the subsampling's channel merge.
#include <algorithm>
#include <cstdint>

#include "launch_common.cuh"
#include "copy_launch.h"

namespace steno::ops::cuda {
namespace {

// Through f32, which holds every f16 and bf16 value exactly, so each conversion rounds once (to nearest even,
// from_f32's _rn intrinsics), exactly as the host's Tensor::to.
template <typename S, typename D>
__global__ void cast_kernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_f32<D>(to_f32(src[i]));
}

// x [B, C, T, F] -> y [B, T, C*F]. Grid (output rows b * T + t of this launch, from row0): a block writes one
// row, coalesced, reading F consecutive values of each channel. The index within the row is an I (int where the
// row is shorter than 2^31, as it always is in practice): a grid-stride loop with four 64-bit divisions per
// element took 0.64 ms at 32 x 45 s for 150 MB.
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads)
    merge_channels_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t c, int64_t t, int64_t f,
                          int64_t row0) {
  const int64_t row = row0 + blockIdx.x, bi = row / t, ti = row - bi * t;
  const I width = static_cast<I>(c * f), ff = static_cast<I>(f);
  const T* xr = x + (bi * c * t + ti) * f;  // channel ci's values of frame ti at xr + ci * t * f
  T* yr = y + row * c * f;
  for (I i = threadIdx.x; i < width; i += kThreads) {
    const I ci = i / ff, fi = i - ci * ff;
    yr[i] = xr[ci * t * f + fi];
  }
}

}  // namespace

// ---- launchers (declared in copy_launch.h) ----

void launch_cast(Dt src_dt, const void* src, Dt dst_dt, void* dst, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_dt(src_dt, [&](auto src_tag) {
    using S = decltype(src_tag);
    dispatch_dt(dst_dt, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      cast_kernel<S, D><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(dst), n);
    });
  });
}

void launch_merge_channels(Dt dt, const void* x, void* y, int64_t b, int64_t c, int64_t t, int64_t f,
                           cudaStream_t stream) {
  const int64_t n = b * c * t * f;
  if (n == 0) return;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t r0 = 0; r0 < b * t; r0 += kMaxGridX) {
      const unsigned rows = static_cast<unsigned>(std::min(kMaxGridX, b * t - r0));
      if (c * f <= kMaxGridX)
        merge_channels_kernel<T, int><<<rows, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), c,
                                                                     t, f, r0);
      else
        merge_channels_kernel<T, int64_t><<<rows, kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                         static_cast<T*>(y), c, t, f, r0);
    }
  });
}

}  // namespace steno::ops::cuda
