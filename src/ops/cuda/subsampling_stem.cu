// subsampling_stem (include/steno/ops/conv.h) in one kernel: the 1 -> C 3x3 stride-2 conv, its frame mask and
// ReLU, and the depthwise 3x3 stride-2 conv with its mask, without writing the first conv's output to memory.
// As separate ops the first conv wrote C x H/2 x W/2 values per item (3.1 GB at 32 x 60 s, 256 channels, bf16),
// the ReLU read and rewrote them and the depthwise conv read them again: 15 ms on the H200 (8.4 + 1.6 + 5.1).
//
// A block takes kRows output frames of one item and kChannels channels. It stages the input rows those frames
// need (4 * kRows + 3 of them, all W features plus the zero padding) in shared memory as f32, once. Then, kGroup
// channels at a time, every thread computes the first conv's outputs at its own positions of the block's tile
// (2 * kRows + 1 rows by W1 + 2 columns, the border ones being the depthwise conv's zero padding) for the group's
// channels from taps it reads once, rounded to the storage type, masked and rectified exactly as the separate ops
// leave them; after a barrier, the depthwise outputs of the group from that tile. Positions and offsets are
// worked out once per thread, not per channel (integer divisions by the runtime widths made an earlier version of
// this kernel instruction-bound at 7.3 ms). Sums run in the separate kernels' order (bias first, then the taps
// row by row; taps in the padding add an exact zero), so the result equals the unfused ops' bit for bit.
#include <cstdint>

#include "conv_launch.h"
#include "launch_common.cuh"

namespace steno::ops::cuda {

namespace {

constexpr int kRows = 8;        // output frames per block
constexpr int kChannels = 32;   // channels per block
constexpr int kGroup = 8;       // channels per pass through the shared tile
constexpr int kStemThreads = 256;
constexpr int kMaxWidth = 192;  // features (W; 80 and 128 in practice): bounds the positions each thread keeps
constexpr int kMidPerThread = ((2 * kRows + 1) * ((kMaxWidth - 1) / 2 + 3) + kStemThreads - 1) / kStemThreads;
constexpr int kOutPerThread = (kRows * ((kMaxWidth - 1) / 4 + 1) + kStemThreads - 1) / kStemThreads;

struct StemGeom {
  int64_t batch, channels;
  int h, w, h1, w1, h2, w2;
};

__host__ __device__ constexpr int x_rows() { return 4 * kRows + 3; }
__host__ __device__ constexpr int mid_rows() { return 2 * kRows + 1; }

template <typename T>
__global__ void __launch_bounds__(kStemThreads, 2)  // two blocks per SM: at most 128 registers
    subsampling_stem_kernel(StemGeom g, const T* __restrict__ x, const T* __restrict__ w0,
                            const T* __restrict__ b0, const T* __restrict__ wd, const T* __restrict__ bd,
                            const int32_t* __restrict__ frames, T* __restrict__ y) {
  extern __shared__ float smem[];
  const int xw = g.w + 2, mw = g.w1 + 2;  // staged row widths, padding columns included
  const int mid_size = mid_rows() * mw;
  float* xs = smem;                  // [x_rows()][xw]
  float* mids = xs + x_rows() * xw;  // [kGroup][mid_rows()][mw]
  __shared__ float w0s[kChannels][9], wds[kChannels][9], b0s[kChannels], bds[kChannels];

  const int64_t b = blockIdx.z, c0 = int64_t{blockIdx.y} * kChannels;
  const int oh0 = static_cast<int>(blockIdx.x) * kRows;  // first output frame
  const int channels = static_cast<int>(min(int64_t{kChannels}, g.channels - c0));
  // Frames kept at each step (all, unmasked).
  const int keep_in = frames ? frames[b] : g.h;
  const int keep_mid = frames ? frames[g.batch + b] : g.h1;
  const int keep_out = frames ? frames[2 * g.batch + b] : g.h2;

  // Input rows ih0 .. ih0 + x_rows() - 1 and columns -1 .. W, zero outside x and past the kept frames.
  const int ih0 = 4 * oh0 - 3;
  const T* xb = x + b * int64_t{g.h} * g.w;
  for (int i = threadIdx.x; i < x_rows() * xw; i += kStemThreads) {
    const int r = i / xw, ih = ih0 + r, iw = i % xw - 1;
    xs[i] = ih >= 0 && ih < g.h && ih < keep_in && iw >= 0 && iw < g.w ? to_f32(xb[int64_t{ih} * g.w + iw]) : 0.0f;
  }
  for (int i = threadIdx.x; i < channels * 9; i += kStemThreads) {
    w0s[i / 9][i % 9] = to_f32(w0[c0 * 9 + i]);
    wds[i / 9][i % 9] = to_f32(wd[c0 * 9 + i]);
  }
  for (int i = threadIdx.x; i < channels; i += kStemThreads) {
    b0s[i] = b0 ? to_f32(b0[c0 + i]) : 0.0f;
    bds[i] = bd ? to_f32(bd[c0 + i]) : 0.0f;
  }

  // This thread's tile positions: tile index i = threadIdx.x + k * kStemThreads, its first staged tap (x row
  // 2*h1 - 1 is staged row 2*r, column 2*w1 - 1 staged column 2*w1) or -1 where the first conv has no output
  // there (the depthwise conv's padding, rows past the kept frames: zeros).
  const int mh0 = 2 * oh0 - 1;  // first row of the first conv's output in the tile
  int mid_tap[kMidPerThread];
#pragma unroll
  for (int k = 0; k < kMidPerThread; ++k) {
    const int i = threadIdx.x + k * kStemThreads, r = i / mw, h1 = mh0 + r, w1 = i % mw - 1;
    mid_tap[k] = i < mid_size && h1 >= 0 && h1 < g.h1 && h1 < keep_mid && w1 >= 0 && w1 < g.w1 ? 2 * r * xw + 2 * w1
                                                                                                 : -1;
  }
  // And its outputs: frame oh and feature ow read tile rows 2*r2 .. 2*r2+2, columns 2*ow .. 2*ow+2; -1: none.
  int out_tap[kOutPerThread], out_at[kOutPerThread];
  bool out_kept[kOutPerThread];
#pragma unroll
  for (int k = 0; k < kOutPerThread; ++k) {
    const int i = threadIdx.x + k * kStemThreads, r2 = i / g.w2, ow = i % g.w2, oh = oh0 + r2;
    const bool some = r2 < kRows && oh < g.h2;
    out_tap[k] = some ? 2 * r2 * mw + 2 * ow : -1;
    out_at[k] = oh * g.w2 + ow;
    out_kept[k] = oh < keep_out;
  }
  __syncthreads();

  for (int cg = 0; cg < channels; cg += kGroup) {
    const int group = min(kGroup, channels - cg);
    // The first conv's outputs of the group's channels, as conv2d + zero_padded_frames + relu leave them.
#pragma unroll
    for (int k = 0; k < kMidPerThread; ++k) {
      const int i = threadIdx.x + k * kStemThreads;
      if (i >= mid_size) break;
      if (mid_tap[k] < 0) {
        for (int c = 0; c < group; ++c) mids[c * mid_size + i] = 0.0f;
        continue;
      }
      float taps[9];
      const float* xr = xs + mid_tap[k];
#pragma unroll
      for (int t = 0; t < 9; ++t) taps[t] = xr[(t / 3) * xw + t % 3];
#pragma unroll
      for (int c = 0; c < kGroup; ++c) {
        if (c >= group) break;
        float acc = b0s[cg + c];
#pragma unroll
        for (int t = 0; t < 9; ++t) acc = fmaf(w0s[cg + c][t], taps[t], acc);
        const float rounded = to_f32(from_f32<T>(acc));
        mids[c * mid_size + i] = rounded > 0.0f ? rounded : 0.0f;  // relu's own rule (NaN -> 0)
      }
    }
    __syncthreads();
    // The depthwise outputs of the group's channels.
#pragma unroll
    for (int k = 0; k < kOutPerThread; ++k) {
      if (out_tap[k] < 0) continue;
#pragma unroll
      for (int c = 0; c < kGroup; ++c) {
        if (c >= group) break;
        const float* mr = mids + c * mid_size + out_tap[k];
        float acc = bds[cg + c];
#pragma unroll
        for (int t = 0; t < 9; ++t) acc = fmaf(wds[cg + c][t], mr[(t / 3) * mw + t % 3], acc);
        y[(b * g.channels + c0 + cg + c) * int64_t{g.h2} * g.w2 + out_at[k]] =
            from_f32<T>(out_kept[k] ? acc : 0.0f);
      }
    }
    __syncthreads();  // the tile is read before the next group overwrites it
  }
}

size_t stem_shared_bytes(int w, int w1) {
  return sizeof(float) *
         (static_cast<size_t>(x_rows()) * (w + 2) + static_cast<size_t>(kGroup) * mid_rows() * (w1 + 2));
}

}  // namespace

int64_t subsampling_stem_max_width() { return kMaxWidth; }

void launch_subsampling_stem(Dt dt, const void* x, const void* w0, const void* b0, const void* w_dw,
                             const void* b_dw, const int32_t* frames, void* y, int64_t batch, int64_t channels,
                             int64_t h, int64_t w, cudaStream_t stream) {
  StemGeom g{batch, channels, static_cast<int>(h), static_cast<int>(w), 0, 0, 0, 0};
  g.h1 = (g.h - 1) / 2 + 1;
  g.w1 = (g.w - 1) / 2 + 1;
  g.h2 = (g.h1 - 1) / 2 + 1;
  g.w2 = (g.w1 - 1) / 2 + 1;
  const size_t bytes = stem_shared_bytes(g.w, g.w1);
  const dim3 grid(static_cast<unsigned>((g.h2 + kRows - 1) / kRows),
                  static_cast<unsigned>((channels + kChannels - 1) / kChannels), static_cast<unsigned>(batch));
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    // Over 48 KB of shared memory (wide inputs) needs the kernel's opt-in; a refusal fails the launch, which the
    // caller's check_launch reports.
    (void)cudaFuncSetAttribute(subsampling_stem_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(bytes));
    subsampling_stem_kernel<T><<<grid, kStemThreads, bytes, stream>>>(
        g, static_cast<const T*>(x), static_cast<const T*>(w0), static_cast<const T*>(b0),
        static_cast<const T*>(w_dw), static_cast<const T*>(b_dw), frames, static_cast<T*>(y));
  });
}

}  // namespace steno::ops::cuda
