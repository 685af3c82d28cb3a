// The CUDA front end's kernels (see features_kernels.h). Each mirrors a loop of FeatureExtractor::compute
// (src/asr/features.cc) with the same operation order, so that the GPU features match the CPU's to f32 rounding.
#include "features_kernels.h"

#include "launch_common.cuh"

namespace steno::asr::cuda_features {
namespace {

using ops::cuda::thread_index;
using ops::cuda::thread_stride;

// Sample i of clip b after the gain and pre-emphasis, in the clip's unpadded coordinates (0 <= i < max_len). The
// gain rounds each sample to f32 first, as NeMo's x * scale tensor does before the preprocessor.
__device__ __forceinline__ float emphasised(const float* x, int64_t len, int64_t i, float gain, const FrameParams& p) {
  if (p.nemo25 && i >= len) return 0.0f;  // 2.5: the batch padding stays zero
  const float cur = i < len ? __fmul_rn(gain, x[i]) : 0.0f;
  if (i == 0) return cur;
  const float prev = i - 1 < len ? __fmul_rn(gain, x[i - 1]) : 0.0f;
  return __fsub_rn(cur, __fmul_rn(p.preemph, prev));  // no FMA contraction: the CPU rounds twice too
}

// A block per frame row (b, t), its threads over the row's win values: the row's divisions once per block. A thread
// per value with four 64-bit divisions each took 0.59 ms for 32 x 45 s on the H200, four times its memory traffic.
constexpr int kRowThreads = 128;
constexpr int64_t kMaxRowBlocks = 1 << 20;  // more rows: each block takes several

__global__ void __launch_bounds__(kRowThreads) frames_kernel(const float* audio, ClipTable clips, int64_t batch,
                                                             int64_t max_frames, FrameParams p, float* out) {
  for (int64_t row = blockIdx.x; row < batch * max_frames; row += gridDim.x) {
    const int64_t t = row % max_frames, b = row / max_frames;
    float* o = out + row * p.win;
    if (t >= clips.frames[b]) {
      for (int n = threadIdx.x; n < p.win; n += kRowThreads) o[n] = 0.0f;
      continue;
    }
    const int64_t len = clips.length[b], first = t * p.hop + p.offset - p.pad;
    const float gain = clips.gain != nullptr ? clips.gain[b] : 1.0f;
    const float* x = audio + clips.start[b];
    for (int n = threadIdx.x; n < p.win; n += kRowThreads) {
      int64_t i = first + n;
      float v = 0.0f;
      if (p.nemo25) {
        if (i >= 0 && i < len) v = emphasised(x, len, i, gain, p);
      } else {  // reflect padding around the batch-padded signal [0, max_len)
        if (i < 0) i = -i;
        if (i >= p.max_len) i = 2 * (p.max_len - 1) - i;
        v = emphasised(x, len, i, gain, p);
      }
      o[n] = v;
    }
  }
}

constexpr int kPeakThreads = 256;

__global__ void __launch_bounds__(kPeakThreads) peak_gains_kernel(const float* audio, ClipTable clips, float eps,
                                                                  float* gains) {
  __shared__ float red[kPeakThreads / 32];
  const int64_t b = blockIdx.x, len = clips.length[b];
  const float* x = audio + clips.start[b];
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < len; i += kPeakThreads) m = fmaxf(m, x[i]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kPeakThreads / 32; ++w) m = fmaxf(m, red[w]);
    m = fmaxf(m, red[0]);
    gains[b] = len == 0 ? 1.0f : __fdiv_rn(1.0f, __fadd_rn(m, eps));
  }
}

// |X|^2 of each bin, a block per row (the real parts then the imaginary parts of its spectrum); the same values as
// a thread per value with 64-bit divisions, which took 0.26 ms for 32 x 45 s on the H200.
__global__ void __launch_bounds__(kRowThreads) power_kernel(const float* spec, int64_t rows, int32_t bins,
                                                            float* power) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* s = spec + r * 2 * bins;
    for (int k = threadIdx.x; k < bins; k += kRowThreads) {
      const float re = s[k], im = s[bins + k];
      const float mag = sqrtf(__fadd_rn(__fmul_rn(re, re), __fmul_rn(im, im)));
      power[r * bins + k] = __fmul_rn(mag, mag);
    }
  }
}

// One block per (32 mel channels, clip): threadIdx.x picks the channel (coalesced rows), threadIdx.y strides over
// the frames; sums in double, as the CPU does. 32 lanes of frames, not 8: with a block per 32 channels of a clip
// there are only 4 blocks a clip (128 mels), and at 8 lanes the kernel took 0.42 ms of a 45 s clip's front end
// and 0.59 ms at 32 x 45 s on the H200.
constexpr int kChannels = 32, kLanes = 32;

__global__ void log_normalize_kernel(float* mel, const int64_t* frames, int64_t max_frames, int32_t n_mels,
                                     float guard, bool per_feature) {
  __shared__ double partial[kLanes][kChannels];
  const int64_t b = blockIdx.y;
  const int f = blockIdx.x * kChannels + threadIdx.x;
  const int lane = threadIdx.y;
  const int64_t n = frames[b];
  float* m = mel + b * max_frames * n_mels;
  const bool active = f < n_mels;

  auto block_sum = [&](double v) {
    partial[lane][threadIdx.x] = v;
    __syncthreads();
    double s = 0;
    for (int l = 0; l < kLanes; ++l) s += partial[l][threadIdx.x];
    __syncthreads();
    return s;
  };

  double sum = 0;
  if (active)
    for (int64_t t = lane; t < n; t += kLanes) {
      const float v = logf(m[t * n_mels + f] + guard);
      m[t * n_mels + f] = v;
      sum += v;
    }
  const double mean = n > 0 ? block_sum(sum) / n : block_sum(0);
  double sq = 0;
  if (active)
    for (int64_t t = lane; t < n; t += kLanes) {
      const double d = m[t * n_mels + f] - mean;
      sq += d * d;
    }
  const double total_sq = block_sum(sq);
  if (!active) return;
  const double sd = (n > 1 ? sqrt(total_sq / (n - 1)) : 0.0) + 1e-5;
  const float fmean = static_cast<float>(mean), fstd = static_cast<float>(sd);
  for (int64_t t = lane; t < max_frames; t += kLanes)
    m[t * n_mels + f] = t >= n ? 0.0f : per_feature ? __fdiv_rn(__fsub_rn(m[t * n_mels + f], fmean), fstd)
                                                    : m[t * n_mels + f];
}

// Without normalisation (Sortformer v2's "normalize: none") only the log and the zero rows: one pass with a
// thread per value, where log_normalize_kernel's per-channel blocks (one per 32 channels and clip) would also
// take the statistics it does not use (0.7 ms of a 32 x 60 s batch on the H200).
__global__ void log_only_kernel(float* mel, const int64_t* frames, int64_t batch, int64_t max_frames,
                                int32_t n_mels, float guard) {
  const int64_t n_all = batch * max_frames * n_mels;
  for (int64_t i = thread_index(); i < n_all; i += thread_stride()) {
    const int64_t row = i / n_mels, t = row % max_frames, b = row / max_frames;
    mel[i] = t >= frames[b] ? 0.0f : logf(mel[i] + guard);
  }
}

}  // namespace

void launch_frames(const float* audio, ClipTable clips, int64_t batch, int64_t max_frames, FrameParams p,
                   float* frames, cudaStream_t stream) {
  const int64_t rows = batch * max_frames;
  if (rows * p.win == 0) return;
  frames_kernel<<<static_cast<unsigned>(std::min(rows, kMaxRowBlocks)), kRowThreads, 0, stream>>>(
      audio, clips, batch, max_frames, p, frames);
}

void launch_peak_gains(const float* audio, ClipTable clips, int64_t batch, float eps, float* gains,
                       cudaStream_t stream) {
  if (batch == 0) return;
  peak_gains_kernel<<<static_cast<unsigned>(batch), kPeakThreads, 0, stream>>>(audio, clips, eps, gains);
}

void launch_power(const float* spec, int64_t rows, int32_t bins, float* power, cudaStream_t stream) {
  if (rows * bins == 0) return;
  power_kernel<<<static_cast<unsigned>(std::min(rows, kMaxRowBlocks)), kRowThreads, 0, stream>>>(spec, rows, bins,
                                                                                                power);
}

void launch_log_normalize(float* mel, const int64_t* frames, int64_t batch, int64_t max_frames, int32_t n_mels,
                          float guard, bool per_feature, cudaStream_t stream) {
  if (batch == 0 || n_mels == 0) return;
  if (!per_feature) {
    const int64_t n_all = batch * max_frames * n_mels;
    log_only_kernel<<<ops::cuda::grid_for(n_all), ops::cuda::kThreads, 0, stream>>>(mel, frames, batch, max_frames,
                                                                                     n_mels, guard);
    return;
  }
  const dim3 grid((n_mels + kChannels - 1) / kChannels, static_cast<unsigned>(batch));
  log_normalize_kernel<<<grid, dim3(kChannels, kLanes), 0, stream>>>(mel, frames, max_frames, n_mels, guard,
                                                                      per_feature);
}

}  // namespace steno::asr::cuda_features
