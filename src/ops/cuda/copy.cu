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

// x [B, C, T, F] -> y [B, T, C*F]; one thread per output element, so the writes are coalesced and the reads run
// along F.
template <typename T>
__global__ void merge_channels_kernel(const T* x, T* y, int64_t c, int64_t t, int64_t f, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t fi = i % f, ci = (i / f) % c, ti = (i / (f * c)) % t, bi = i / (f * c * t);
    y[i] = x[((bi * c + ci) * t + ti) * f + fi];
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
    merge_channels_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), c, t,
                                                                  f, n);
  });
}

}  // namespace steno::ops::cuda
