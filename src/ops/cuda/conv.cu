// Convolutions of the FastConformer encoder on CUDA (include/steno/ops/conv.h), f32 accumulation:
//   conv2d with one input channel (the subsampling's first conv): a thread per output pixel computes 16 output
//     channels from taps it loads once;
//   conv2d, one input channel per output channel (depthwise): a direct kernel, a block per span of an output
//     plane and a thread per few outputs, KH*KW taps from L1/L2 (3 x 3 weights in registers);
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

// ---- direct conv2d: Cin/groups == 1 ----

// Grid (ceil(Ho*Wo / kDirectSpan), planes of this launch from plane0): a block works on kDirectSpan outputs of
// one output plane (image b, channel co), each thread on kDirectSpan / kThreads of them, so the plane's 64-bit
// divisions are made once per thread for several outputs and the per-output index is a 32-bit spatial one
// (Ho*Wo < 2^31, checked by the launcher). Four 64-bit divisions per output made an early version 30 ms of the
// 0.6b encoder's 130 at 32 x 45 s, and a block per 256 outputs (300,000 blocks of one output per thread for the
// subsampling's second depthwise conv at 32 x 45 s) still 1.3 ms. K > 0: a K x K kernel with its taps unrolled
// and held in registers (the subsampling's 3 x 3); K = 0: any size. Taps outside the input are skipped (zero
// padding) and the rest summed bias first, row by row, as on the CPU.
constexpr int kDirectSpan = 4 * kThreads;

template <typename T, int K>
__global__ void __launch_bounds__(kThreads)
    conv2d_direct_kernel(ConvGeom g, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                         T* __restrict__ y, int64_t plane0) {
  const int64_t plane = plane0 + blockIdx.y;
  const int64_t co = plane % g.cout, b = plane / g.cout;
  const int64_t mult = g.cout / g.groups;  // output channels per input channel
  const T* xp = x + (b * g.cin + co / mult) * g.h * g.wd;
  const T* wp = w + co * g.kh * g.kw;
  const int wo = static_cast<int>(g.wo), hw = static_cast<int>(g.ho * g.wo);
  const int h = static_cast<int>(g.h), wd = static_cast<int>(g.wd);
  const int kh = K > 0 ? K : static_cast<int>(g.kh), kw = K > 0 ? K : static_cast<int>(g.kw);
  const float b0 = bias ? to_f32(bias[co]) : 0.0f;
  float wk[K > 0 ? K * K : 1];
#pragma unroll
  for (int t = 0; t < K * K; ++t) wk[t] = to_f32(wp[t]);
  T* yp = y + plane * hw;
#pragma unroll  // K > 0: the outputs' loads all in flight at once
  for (int k = 0; k < kDirectSpan / kThreads; ++k) {
    const int idx = static_cast<int>(blockIdx.x) * kDirectSpan + k * kThreads + static_cast<int>(threadIdx.x);
    if (idx >= hw) break;
    const int oh = idx / wo, ow = idx - oh * wo;
    const int ih0 = oh * g.stride_h - g.pad_h, iw0 = ow * g.stride_w - g.pad_w;
    float acc = b0;
#pragma unroll  // K > 0: kh and kw are constants
    for (int r = 0; r < kh; ++r) {
      const int ih = ih0 + r;
      const bool row_in = ih >= 0 && ih < h;
#pragma unroll
      for (int s = 0; s < kw; ++s) {
        const int iw = iw0 + s;
        const float wt = K > 0 ? wk[r * kw + s] : to_f32(wp[r * kw + s]);
        if (row_in && iw >= 0 && iw < wd) acc = fmaf(wt, to_f32(xp[int64_t{ih} * wd + iw]), acc);
      }
    }
    yp[idx] = from_f32<T>(acc);
  }
}

// ---- conv2d with one input channel and many outputs (the subsampling's first conv) ----

// Each thread computes kChannels output channels of one output pixel: it loads the pixel's taps once and keeps
// them in registers, with the block's kChannels filters in shared memory, instead of every output re-reading
// its taps. Grid (ceil(Ho*Wo / kThreads), batch, ceil(Cout / kChannels)); kh*kw <= kMaxTaps.
constexpr int kChannels = 16, kMaxTaps = 25;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    conv2d_one_input_kernel(ConvGeom g, const T* __restrict__ x, const T* __restrict__ w,
                            const T* __restrict__ bias, T* __restrict__ y) {
  __shared__ float ws[kChannels][kMaxTaps];
  __shared__ float bs[kChannels];
  const int taps = static_cast<int>(g.kh * g.kw);
  const int64_t b = blockIdx.y, co0 = int64_t{blockIdx.z} * kChannels;
  const int channels = static_cast<int>(min(int64_t{kChannels}, g.cout - co0));
  for (int e = threadIdx.x; e < channels * taps; e += kThreads) ws[e / taps][e % taps] = to_f32(w[co0 * taps + e]);
  for (int c = threadIdx.x; c < channels; c += kThreads) bs[c] = bias ? to_f32(bias[co0 + c]) : 0.0f;
  __syncthreads();
  const int wo = static_cast<int>(g.wo), hw = static_cast<int>(g.ho * g.wo);
  const int idx = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  if (idx >= hw) return;
  const int oh = idx / wo, ow = idx % wo;
  const int h = static_cast<int>(g.h), wd = static_cast<int>(g.wd), kw = static_cast<int>(g.kw);
  const int ih0 = oh * g.stride_h - g.pad_h, iw0 = ow * g.stride_w - g.pad_w;
  const T* xp = x + b * g.h * g.wd;
  float xv[kMaxTaps];
#pragma unroll
  for (int t = 0; t < kMaxTaps; ++t) {
    const int ih = ih0 + t / kw, iw = iw0 + t % kw;
    xv[t] = t < taps && ih >= 0 && ih < h && iw >= 0 && iw < wd ? to_f32(xp[int64_t{ih} * wd + iw]) : 0.0f;
  }
  T* yp = y + (b * g.cout + co0) * hw + idx;
  for (int c = 0; c < channels; ++c) {
    float acc = bs[c];
#pragma unroll
    for (int t = 0; t < kMaxTaps; ++t)
      if (t < taps) acc = fmaf(ws[c][t], xv[t], acc);  // taps in the direct kernel's order
    yp[int64_t{c} * hw] = from_f32<T>(acc);
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
// summed in the CPU kernel's order. Grid (ceil(C / kThreads), min(T_out, 65535), batch): channels fastest so
// loads and stores coalesce, and no per-output division.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    depthwise_conv1d_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                            T* __restrict__ y, int64_t steps, int64_t channels, int64_t k_n, int64_t out_steps,
                            int pad_left) {
  const int64_t c = int64_t{blockIdx.x} * kThreads + threadIdx.x, b = blockIdx.z;
  if (c >= channels) return;
  const T* xb = x + b * steps * channels + c;
  const T* wc = w + c * k_n;
  const float b0 = bias ? to_f32(bias[c]) : 0.0f;
  for (int64_t t = blockIdx.y; t < out_steps; t += gridDim.y) {
    const int64_t k_lo = max(int64_t{0}, pad_left - t), k_hi = min(k_n, steps + pad_left - t);
    float acc = b0;
    for (int64_t kk = k_lo; kk < k_hi; ++kk) acc = fmaf(to_f32(wc[kk]), to_f32(xb[(t + kk - pad_left) * channels]), acc);
    y[(b * out_steps + t) * channels + c] = from_f32<T>(acc);
  }
}

// y[r, j] = bias[r % channels] for rows r of [rows, cols] (rows = images x channels): the pointwise GEMM's C.
// Grid (rows of this launch from row0): a block fills a row, 16 bytes a store where rows are aligned (vec). A
// block per 256 values of a row (500,000 blocks for the subsampling's first pointwise conv at 32 x 45 s) took 0.9
// ms there, most of it starting blocks.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    fill_channel_bias_kernel(const T* __restrict__ bias, T* __restrict__ y, int64_t row0, int64_t cols,
                             int64_t channels, bool vec) {
  const int64_t row = row0 + blockIdx.x;
  const T v = bias[row % channels];
  T* yr = y + row * cols;
  int64_t j = threadIdx.x;
  if (vec) {
    Pack<T> p;
#pragma unroll
    for (int k = 0; k < Pack<T>::kSize; ++k) p.v[k] = v;
    Pack<T>* yv = reinterpret_cast<Pack<T>*>(yr);
    for (; j < cols / Pack<T>::kSize; j += kThreads) yv[j] = p;
    j = cols / Pack<T>::kSize * Pack<T>::kSize + threadIdx.x;
  }
  for (; j < cols; j += kThreads) yr[j] = v;
}

constexpr int64_t kMaxGridY = 65535;


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
    if (cin == 1 && groups == 1 && kh * kw <= kMaxTaps && batch <= kMaxGridY) {
      const dim3 grid(static_cast<unsigned>((ho * wo + kThreads - 1) / kThreads), static_cast<unsigned>(batch),
                      static_cast<unsigned>((cout + kChannels - 1) / kChannels));
      conv2d_one_input_kernel<T><<<grid, kThreads, 0, stream>>>(g, xp, wp, bp, yp);
      return;
    }
    if (cin == groups) {  // one input channel per output channel: planes in grid y, sliced to its limit
      const int64_t planes = batch * cout;
      const unsigned spatial = static_cast<unsigned>((ho * wo + kDirectSpan - 1) / kDirectSpan);
      for (int64_t p0 = 0; p0 < planes; p0 += kMaxGridY) {
        const dim3 grid(spatial, static_cast<unsigned>(std::min(kMaxGridY, planes - p0)));
        if (kh == 3 && kw == 3) conv2d_direct_kernel<T, 3><<<grid, kThreads, 0, stream>>>(g, xp, wp, bp, yp, p0);
        else conv2d_direct_kernel<T, 0><<<grid, kThreads, 0, stream>>>(g, xp, wp, bp, yp, p0);
      }
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
    const bool vec = aligned16(y) && cols * int64_t{sizeof(T)} % 16 == 0;
    for (int64_t r0 = 0; r0 < rows; r0 += kMaxGridX)
      fill_channel_bias_kernel<T><<<static_cast<unsigned>(std::min(kMaxGridX, rows - r0)), kThreads, 0, stream>>>(
          static_cast<const T*>(bias), static_cast<T*>(y), r0, cols, channels, vec);
  });
}

void launch_depthwise_conv1d(Dt dt, const void* x, const void* w, const void* bias, void* y, int64_t batch,
                             int64_t steps, int64_t channels, int64_t k, int64_t out_steps, int pad_left,
                             cudaStream_t stream) {
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(static_cast<unsigned>((channels + kThreads - 1) / kThreads),
                    static_cast<unsigned>(std::min(kMaxGridY, out_steps)), static_cast<unsigned>(batch));
    depthwise_conv1d_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(w),
                                                              static_cast<const T*>(bias), static_cast<T*>(y), steps,
                                                              channels, k, out_steps, pad_left);
  });
}

}  // namespace steno::ops::cuda
