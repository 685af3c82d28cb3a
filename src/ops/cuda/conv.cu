// Convolutions of the FastConformer encoder on CUDA (include/steno/ops/conv.h), f32 accumulation:
//   conv2d, one input channel per output channel (the subsampling's first conv, depthwise): a direct kernel,
//     one thread per output, KH*KW taps from L1/L2;
//   conv2d otherwise (pointwise 1x1, general grouped): an implicit GEMM per (image, group),
//     y_g[Cout/G, Ho*Wo] = w_g[Cout/G, K] · col[K, Ho*Wo] with K = Cin/G*KH*KW, where the im2col tile is
//     gathered straight into shared memory (64 x 64 output tiles, 16-deep K steps, 4 x 4 outputs per thread);
//   depthwise_conv1d (channel-last): one thread per output, channels fastest so loads and stores coalesce.
// The pointwise convs (1x1, stride 1, no padding, one group) do not come here: conv_cuda.cc runs them as
// cuBLASLt GEMMs on the tensor cores (per image y_b[Cout, HW] = w[Cout, Cin] · x_b[Cin, HW] + y_b, with y
// prefilled by launch_fill_channel_bias), which took them from ~30 % of the 0.6b encoder's time at 32 x 45 s
// (this file's implicit GEMM, f32 FMAs) to a small share.
#include <algorithm>
#include <cstdint>

#include "launch_common.cuh"
#include "conv_launch.h"

namespace steno::ops::cuda {

namespace {

struct ConvGeom {
  int64_t batch, cin, h, wd, cout, kh, kw, ho, wo, groups;
  int stride_h, stride_w, pad_h, pad_w;
};

// Blocks of kThreads (launch_common.cuh); the direct kernels cap their grid much higher than the shared kMaxBlocks.
constexpr int64_t kConvMaxBlocks = int64_t{1} << 20;  // grid-stride beyond this many blocks

// ---- direct conv2d: Cin/groups == 1 ----

template <typename T>
__global__ void __launch_bounds__(kThreads)
    conv2d_direct_kernel(ConvGeom g, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                         T* __restrict__ y) {
  const int64_t total = g.batch * g.cout * g.ho * g.wo;
  const int64_t mult = g.cout / g.groups;  // output channels per input channel
  for (int64_t idx = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ow = idx % g.wo, oh = (idx / g.wo) % g.ho, co = (idx / (g.wo * g.ho)) % g.cout;
    const int64_t b = idx / (g.wo * g.ho * g.cout);
    const T* xp = x + (b * g.cin + co / mult) * g.h * g.wd;
    const T* wp = w + co * g.kh * g.kw;
    const int64_t ih0 = oh * g.stride_h - g.pad_h, iw0 = ow * g.stride_w - g.pad_w;
    float acc = bias ? to_f32(bias[co]) : 0.0f;
    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t ih = ih0 + r;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t s = 0; s < g.kw; ++s) {
        const int64_t iw = iw0 + s;
        if (iw >= 0 && iw < g.wd) acc = fmaf(to_f32(wp[r * g.kw + s]), to_f32(xp[ih * g.wd + iw]), acc);
      }
    }
    y[idx] = from_f32<T>(acc);
  }
}

// ---- implicit-GEMM conv2d: everything else ----

constexpr int kTileM = 64, kTileN = 64, kTileK = 16;

// Grid (ceil(N / 64), ceil(M / 64), images*groups in this launch, from z0). 256 threads: thread (tx, ty) of a
// 16 x 16 layout owns rows ty + 16i and columns tx + 16j of the tile, so shared reads are broadcasts or
// consecutive words.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    conv2d_igemm_kernel(ConvGeom g, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                        T* __restrict__ y, int64_t z0) {
  __shared__ float a_s[kTileK][kTileM];  // a_s[k][m] = w_g[m0 + m][k0 + k]
  __shared__ float b_s[kTileK][kTileN];  // b_s[k][n] = col[k0 + k][n0 + n]
  const int64_t z = z0 + blockIdx.z, b = z / g.groups, grp = z % g.groups;
  const int64_t cin_g = g.cin / g.groups, cout_g = g.cout / g.groups;
  const int64_t khw = g.kh * g.kw, m_n = cout_g, n_n = g.ho * g.wo, k_n = cin_g * khw;
  const int64_t m0 = int64_t{blockIdx.y} * kTileM, n0 = int64_t{blockIdx.x} * kTileN;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const T* wg = w + grp * cout_g * k_n;
  const T* xg = x + (b * g.cin + grp * cin_g) * g.h * g.wd;

  // This thread gathers column n0 + bn of the im2col tile, rows bk + 4q: its output pixel is fixed.
  const int bn = tid % kTileN, bk = tid / kTileN;
  const int64_t n_ld = n0 + bn;
  const bool n_ok = n_ld < n_n;
  const int64_t ih0 = (n_ld / g.wo) * g.stride_h - g.pad_h, iw0 = (n_ld % g.wo) * g.stride_w - g.pad_w;
  // And w_g row m0 + am, columns ak .. ak + 3.
  const int am = tid / 4, ak = (tid % 4) * 4;
  const bool m_ok = m0 + am < m_n;

  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < k_n; k0 += kTileK) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t kk = k0 + ak + q;
      a_s[ak + q][am] = m_ok && kk < k_n ? to_f32(wg[(m0 + am) * k_n + kk]) : 0.0f;
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t kk = k0 + bk + 4 * q;
      float val = 0.0f;
      if (n_ok && kk < k_n) {
        const int64_t ci = kk / khw, rem = kk % khw;
        const int64_t ih = ih0 + rem / g.kw, iw = iw0 + rem % g.kw;
        if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.wd) val = to_f32(xg[(ci * g.h + ih) * g.wd + iw]);
      }
      b_s[bk + 4 * q][bn] = val;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = a_s[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = b_s[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t m = m0 + ty + 16 * i;
    if (m >= m_n) continue;
    const int64_t co = grp * cout_g + m;
    const float bv = bias ? to_f32(bias[co]) : 0.0f;
    T* yr = y + (b * g.cout + co) * n_n;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t n = n0 + tx + 16 * j;
      if (n < n_n) yr[n] = from_f32<T>(acc[i][j] + bv);
    }
  }
}

// ---- depthwise_conv1d, channel-last ----

// y[b, t, c] = bias[c] + sum_k w[c, k] * x[b, t + k - pad_left, c], taps outside [0, T) skipped (zero padding),
// summed in the CPU kernel's order.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    depthwise_conv1d_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                            T* __restrict__ y, int64_t batch, int64_t steps, int64_t channels, int64_t k_n,
                            int64_t out_steps, int pad_left) {
  const int64_t total = batch * out_steps * channels;
  for (int64_t idx = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = idx % channels, t = (idx / channels) % out_steps, b = idx / (channels * out_steps);
    const int64_t k_lo = max(int64_t{0}, pad_left - t), k_hi = min(k_n, steps + pad_left - t);
    const T* xb = x + b * steps * channels + c;
    float acc = bias ? to_f32(bias[c]) : 0.0f;
    for (int64_t kk = k_lo; kk < k_hi; ++kk)
      acc = fmaf(to_f32(w[c * k_n + kk]), to_f32(xb[(t + kk - pad_left) * channels]), acc);
    y[idx] = from_f32<T>(acc);
  }
}

// y[r, j] = bias[r % channels] for rows r of [rows, cols] (rows = images x channels): the pointwise GEMM's C.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    fill_channel_bias_kernel(const T* __restrict__ bias, T* __restrict__ y, int64_t rows, int64_t cols,
                             int64_t channels) {
  const int64_t total = rows * cols;
  for (int64_t idx = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x)
    y[idx] = bias[(idx / cols) % channels];
}

unsigned conv_grid(int64_t total) {
  return static_cast<unsigned>(std::min<int64_t>(kConvMaxBlocks, (total + kThreads - 1) / kThreads));
}

}  // namespace

void launch_conv2d(Dt dt, const void* x, const void* w, const void* bias, void* y, int64_t batch, int64_t cin,
                   int64_t h, int64_t wd, int64_t cout, int64_t kh, int64_t kw, int64_t ho, int64_t wo, int stride_h,
                   int stride_w, int pad_h, int pad_w, int64_t groups, cudaStream_t stream) {
  const ConvGeom g{batch, cin, h, wd, cout, kh, kw, ho, wo, groups, stride_h, stride_w, pad_h, pad_w};
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x);
    const T* wp = static_cast<const T*>(w);
    const T* bp = static_cast<const T*>(bias);
    T* yp = static_cast<T*>(y);
    if (cin == groups) {  // one input channel per output channel
      conv2d_direct_kernel<T><<<conv_grid(batch * cout * ho * wo), kThreads, 0, stream>>>(g, xp, wp, bp, yp);
      return;
    }
    const int64_t m_n = cout / groups, n_n = ho * wo;
    const int64_t images = batch * groups;
    constexpr int64_t kMaxZ = 65535;  // gridDim.z limit: launch in slices
    for (int64_t z0 = 0; z0 < images; z0 += kMaxZ) {
      const dim3 grid(static_cast<unsigned>((n_n + kTileN - 1) / kTileN),
                      static_cast<unsigned>((m_n + kTileM - 1) / kTileM),
                      static_cast<unsigned>(std::min(kMaxZ, images - z0)));
      conv2d_igemm_kernel<T><<<grid, kThreads, 0, stream>>>(g, xp, wp, bp, yp, z0);
    }
  });
}

void launch_fill_channel_bias(Dt dt, const void* bias, void* y, int64_t rows, int64_t cols, int64_t channels,
                              cudaStream_t stream) {
  if (rows * cols == 0) return;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    fill_channel_bias_kernel<T><<<conv_grid(rows * cols), kThreads, 0, stream>>>(
        static_cast<const T*>(bias), static_cast<T*>(y), rows, cols, channels);
  });
}

void launch_depthwise_conv1d(Dt dt, const void* x, const void* w, const void* bias, void* y, int64_t batch,
                             int64_t steps, int64_t channels, int64_t k, int64_t out_steps, int pad_left,
                             cudaStream_t stream) {
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    depthwise_conv1d_kernel<T><<<conv_grid(batch * out_steps * channels), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<T*>(y), batch,
        steps, channels, k, out_steps, pad_left);
  });
}

}  // namespace steno::ops::cuda
