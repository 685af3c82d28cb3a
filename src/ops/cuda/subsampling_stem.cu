// subsampling_stem (include/steno/ops/conv.h) in one kernel: the 1 -> C 3x3 stride-2 conv, its frame mask and
// ReLU, and the depthwise 3x3 stride-2 conv with its mask, without writing the first conv's output to memory.
// As separate ops the first conv wrote C x H/2 x W/2 values per item (3.1 GB at 32 x 60 s, 256 channels, bf16),
// the ReLU read and rewrote them and the depthwise conv read them again: 15 ms on the H200 (8.4 + 1.6 + 5.1).
//
// A block takes kRows output frames of one item (a warp each) and kChannels channels, 32 at a time (a lane
// each). It stages the input rows those frames need (4 * kRows + 3 of them, all W features plus the zero padding)
// in shared memory as f32, once for all its channels. Then every thread walks its frame's outputs along the
// features for its channel, with the channel's 18 taps and 2 biases in registers: for each output it computes the
// 3 x 2 first-conv values it has not seen yet (the third column is the previous output's), rounded to the storage
// type, masked and rectified exactly as the separate ops leave them, and the depthwise sum over the 3 x 3 of them.
// The lanes of a warp read the same input values (one broadcast each, four features per load), so the kernel runs
// on its FMAs, not on shared memory: an earlier version that gave each thread positions instead of a channel read
// a weight and a tap from shared memory for every FMA and took 4.9 ms at 32 x 45 s on the H200; this one 1.9 ms
// (bench/results/h200-subsampling). Each thread stores 8 outputs at a time, 16 bytes where the rows allow. Sums
// run in the separate kernels' order (bias first, then the taps row by row; taps in the padding add an exact
// zero), so the result equals the unfused ops' bit for bit.
#include <algorithm>
#include <cstdint>

#include "conv_launch.h"
#include "launch_common.cuh"

namespace steno::ops::cuda {

namespace {

constexpr int kRows = 8;         // output frames per block, one per warp
constexpr int kLanes = 32;       // channels a warp works on at once, one per lane
constexpr int kChannels = 128;   // channels per block, 32 at a time: the staged rows serve four groups
constexpr int kStemThreads = kRows * kLanes;
constexpr int kRun = 8;          // outputs a thread makes between two stores
constexpr int kMaxWidth = 192;   // features (W; 80 and 128 in practice): bounds the shared tile

struct StemGeom {
  int64_t batch, channels;
  int h, w, h1, w1, h2, w2;
  int ld;    // staged row stride in floats: the padded row, at least 4 * w2 + 1 (the last output's taps), x4
  bool vec;  // 16-byte stores: every row of y starts 16-byte aligned and holds whole runs
};

__host__ __device__ constexpr int x_rows() { return 4 * kRows + 3; }

struct Channel {  // one channel's weights, in registers
  float w0[9], wd[9], b0, bd;
};

// One output (frame oh, feature ow) of channel ch: xw points at staged row 4 * (oh - oh0), column 4 * ow; ma holds
// the first conv's column 2 * ow - 1 (rows 2 * oh - 1 .. 2 * oh + 1) and is left holding column 2 * ow + 1.
template <typename T>
__device__ __forceinline__ float stem_output(const Channel& ch, const float* xw, int ld, int ow, int w1,
                                             const bool (&row_ok)[3], float (&ma)[3]) {
  float xv[7][5];
#pragma unroll
  for (int i = 0; i < 7; ++i) {
    const float4 v = *reinterpret_cast<const float4*>(xw + i * ld);
    xv[i][0] = v.x, xv[i][1] = v.y, xv[i][2] = v.z, xv[i][3] = v.w;
    xv[i][4] = xw[i * ld + 4];
  }
  float mid[2][3];  // columns 2 * ow and 2 * ow + 1
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const bool col_ok = 2 * ow + j < w1;
#pragma unroll
    for (int i = 0; i < 3; ++i) {
      float acc = ch.b0;
#pragma unroll
      for (int t = 0; t < 9; ++t) acc = fmaf(ch.w0[t], xv[2 * i + t / 3][2 * j + t % 3], acc);
      const float rounded = to_f32(from_f32<T>(acc));
      mid[j][i] = row_ok[i] && col_ok && rounded > 0.0f ? rounded : 0.0f;  // relu's own rule (NaN -> 0)
    }
  }
  float acc = ch.bd;
#pragma unroll
  for (int r = 0; r < 3; ++r) {
    acc = fmaf(ch.wd[3 * r], ma[r], acc);
    acc = fmaf(ch.wd[3 * r + 1], mid[0][r], acc);
    acc = fmaf(ch.wd[3 * r + 2], mid[1][r], acc);
    ma[r] = mid[1][r];
  }
  return acc;
}

template <typename T>
__global__ void __launch_bounds__(kStemThreads, 2)
    subsampling_stem_kernel(StemGeom g, const T* __restrict__ x, const T* __restrict__ w0,
                            const T* __restrict__ b0, const T* __restrict__ wd, const T* __restrict__ bd,
                            const int32_t* __restrict__ frames, T* __restrict__ y) {
  extern __shared__ __align__(16) float xs[];  // [x_rows()][ld]
  const int64_t b = blockIdx.z;
  const int oh0 = static_cast<int>(blockIdx.x) * kRows;  // first output frame
  // Frames kept at each step (all, unmasked).
  const int keep_in = frames ? frames[b] : g.h;
  const int keep_mid = frames ? frames[g.batch + b] : g.h1;
  const int keep_out = frames ? frames[2 * g.batch + b] : g.h2;

  // Input rows 4 * oh0 - 3 .. and columns -1 .. ld - 2, zero outside x and past the kept frames; a warp a row.
  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int ih0 = 4 * oh0 - 3;
  const T* xb = x + b * int64_t{g.h} * g.w;
  for (int r = warp; r < x_rows(); r += kRows) {
    const int ih = ih0 + r;
    const bool row_in = ih >= 0 && ih < g.h && ih < keep_in;
    for (int s = lane; s < g.ld; s += kLanes) {
      const int iw = s - 1;
      xs[r * g.ld + s] = row_in && iw >= 0 && iw < g.w ? to_f32(xb[int64_t{ih} * g.w + iw]) : 0.0f;
    }
  }
  __syncthreads();

  const int oh = oh0 + warp;
  if (oh >= g.h2) return;
  bool row_ok[3];  // the first conv's rows 2 * oh - 1 + i exist and are kept (else the depthwise conv's zeros)
#pragma unroll
  for (int i = 0; i < 3; ++i) {
    const int m = 2 * oh - 1 + i;
    row_ok[i] = m >= 0 && m < g.h1 && m < keep_mid;
  }
  const bool kept = oh < keep_out;
  const float* xw = xs + 4 * warp * g.ld;
  const int64_t c_end = min(g.channels, int64_t{blockIdx.y + 1} * kChannels);
  for (int64_t c = int64_t{blockIdx.y} * kChannels + lane; c < c_end; c += kLanes) {
    Channel ch;
#pragma unroll
    for (int t = 0; t < 9; ++t) ch.w0[t] = to_f32(w0[c * 9 + t]), ch.wd[t] = to_f32(wd[c * 9 + t]);
    ch.b0 = b0 ? to_f32(b0[c]) : 0.0f;
    ch.bd = bd ? to_f32(bd[c]) : 0.0f;
    T* yr = y + ((b * g.channels + c) * g.h2 + oh) * int64_t{g.w2};
    float ma[3] = {0.0f, 0.0f, 0.0f};  // column -1: the depthwise conv's padding
    for (int ow0 = 0; ow0 < g.w2; ow0 += kRun) {
      if (g.vec) {  // whole runs: 16 bytes a store (kRun * sizeof(T) is 16 for 16-bit types, 32 for f32)
        Pack<T> pk[kRun / Pack<T>::kSize];
#pragma unroll
        for (int k = 0; k < kRun; ++k) {
          const float v = stem_output<T>(ch, xw + 4 * (ow0 + k), g.ld, ow0 + k, g.w1, row_ok, ma);
          pk[k / Pack<T>::kSize].v[k % Pack<T>::kSize] = from_f32<T>(kept ? v : 0.0f);
        }
#pragma unroll
        for (int p = 0; p < kRun / Pack<T>::kSize; ++p) reinterpret_cast<Pack<T>*>(yr + ow0)[p] = pk[p];
      } else {
        for (int ow = ow0; ow < min(ow0 + kRun, g.w2); ++ow) {
          const float v = stem_output<T>(ch, xw + 4 * ow, g.ld, ow, g.w1, row_ok, ma);
          yr[ow] = from_f32<T>(kept ? v : 0.0f);
        }
      }
    }
  }
}

}  // namespace

int64_t subsampling_stem_max_width() { return kMaxWidth; }

void launch_subsampling_stem(Dt dt, const void* x, const void* w0, const void* b0, const void* w_dw,
                             const void* b_dw, const int32_t* frames, void* y, int64_t batch, int64_t channels,
                             int64_t h, int64_t w, cudaStream_t stream) {
  StemGeom g{batch, channels, static_cast<int>(h), static_cast<int>(w), 0, 0, 0, 0, 0, false};
  g.h1 = (g.h - 1) / 2 + 1;
  g.w1 = (g.w - 1) / 2 + 1;
  g.h2 = (g.h1 - 1) / 2 + 1;
  g.w2 = (g.w1 - 1) / 2 + 1;
  g.ld = (std::max(g.w + 2, 4 * g.w2 + 1) + 3) / 4 * 4;
  g.vec = g.w2 % kRun == 0 && aligned16(y);
  const size_t bytes = sizeof(float) * static_cast<size_t>(x_rows()) * g.ld;
  const dim3 grid(static_cast<unsigned>((g.h2 + kRows - 1) / kRows),
                  static_cast<unsigned>((channels + kChannels - 1) / kChannels), static_cast<unsigned>(batch));
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    subsampling_stem_kernel<T><<<grid, kStemThreads, bytes, stream>>>(
        g, static_cast<const T*>(x), static_cast<const T*>(w0), static_cast<const T*>(b0),
        static_cast<const T*>(w_dw), static_cast<const T*>(b_dw), frames, static_cast<T*>(y));
  });
}

}  // namespace steno::ops::cuda
