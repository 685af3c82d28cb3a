// The two kernels of relative-position attention's GEMM path (attention_cuda.cc runs the three products on
// cuBLASLt around them): the f32 bias terms u·k_j and v·pos_r, and the masked softmax that joins the two score
// matrices through NeMo's rel_shift and writes the probabilities over the scores in place.
//
// Layouts, for a chunk of nb batch items (see attention_cuda.cc):
//   ac [H][nb][T][ld_ac] f32: q_i·k_j;      bd [H][nb*T][ld_bd] f32: q_i·pos_c for the 2T-1 pos rows c the
//   chunk's offsets touch (c = T-1-i+j);    uk [H][nb][T]: u·k_j;    vp [H][2T-1]: v·pos_c.
//   s(i, j) = (ac + uk_j + bd[T-1-i+j] + vp[T-1-i+j]) * scale; the probabilities, in the storage type T, go to
//   the first half (16-bit T) or all (f32) of the same bytes as the row's scores: ld_p = ld_ac * 4 / sizeof(T).
// Masking as the fused kernel (attention.cu): invisible keys get probability exactly 0, rows i >= length are 0.
#include <cstdint>

#include "launch_common.cuh"
#include "attention_launch.h"

namespace steno::ops::cuda {

namespace {

constexpr int kSoftmaxThreads = 128;

// One warp per dot product of dk elements; rows [0, n_uk) are uk, the rest vp.
template <typename T>
__global__ void bias_dots_kernel(const T* __restrict__ k, const T* __restrict__ pos, const T* __restrict__ u,
                                 const T* __restrict__ vb, float* __restrict__ uk, float* __restrict__ vp,
                                 int64_t nb, int64_t steps, int64_t heads, int64_t dk, int64_t n_pos) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = thread_stride() / 32;
  const int64_t width = heads * dk;
  const int64_t n_uk = heads * nb * steps, n_all = n_uk + heads * n_pos;
  for (int64_t row = thread_index() / 32; row < n_all; row += warps) {
    const T* x;
    const T* bias;
    if (row < n_uk) {  // uk[h][bb][t]
      const int64_t h = row / (nb * steps), bt = row % (nb * steps);
      x = k + bt * width + h * dk;
      bias = u + h * dk;
    } else {  // vp[h][c]
      const int64_t r = row - n_uk, h = r / n_pos, c = r % n_pos;
      x = pos + c * width + h * dk;
      bias = vb + h * dk;
    }
    float acc = 0.0f;
    for (int64_t c = lane; c < dk; c += 32) acc = fmaf(to_f32(bias[c]), to_f32(x[c]), acc);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) (row < n_uk ? uk[row] : vp[row - n_uk]) = acc;
  }
}

// A block-wide reduction of kSoftmaxThreads threads; `red` holds one slot per warp. Every thread gets the result.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float x, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float y = __shfl_xor_sync(0xffffffffu, x, o);
    x = kMax ? fmaxf(x, y) : x + y;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // `red` is free (a previous reduction has been read by everyone)
  if (lane == 0) red[warp] = x;
  __syncthreads();
  float r = red[0];
#pragma unroll
  for (int w = 1; w < kSoftmaxThreads / 32; ++w) r = kMax ? fmaxf(r, red[w]) : r + red[w];
  return r;
}

// One block per score row (h, bb, i); each thread keeps N of the row's keys (j = tid + 128 t) in registers.
template <typename T, int N, bool kRelPos>
__global__ void __launch_bounds__(kSoftmaxThreads)
    rel_pos_softmax_kernel(float* __restrict__ ac, const float* __restrict__ bd, const float* __restrict__ uk,
                           const float* __restrict__ vp, const int32_t* __restrict__ lengths, int64_t nb,
                           int64_t steps, int64_t ld_ac, int64_t ld_bd, int64_t n_pos, int64_t left, int64_t right,
                           float scale) {
  __shared__ float red[kSoftmaxThreads / 32];
  const int64_t row = blockIdx.x;  // ((h * nb) + bb) * steps + i
  const int64_t i = row % steps, hb = row / steps, bb = hb % nb, h = hb / nb;
  const int64_t len = lengths[bb];
  float* s = ac + row * ld_ac;
  T* p = reinterpret_cast<T*>(s);  // the probabilities overwrite the scores' first bytes
  // bd's rows are ordered as the score rows; plain attention (!kRelPos) has no positional terms.
  const float* bd_row = kRelPos ? bd + row * ld_bd + (steps - 1 - i) : nullptr;
  const float* vp_row = kRelPos ? vp + h * n_pos + (steps - 1 - i) : nullptr;
  const float* uk_row = kRelPos ? uk + hb * steps : nullptr;
  // Keys visible from row i: [a, e); none when the row is padding.
  const int64_t a = left < 0 ? 0 : max(int64_t{0}, i - left);
  const int64_t e = i >= len ? 0 : right < 0 ? len : min(len, i + right + 1);

  float sv[N];
  float row_max = -INFINITY;
#pragma unroll
  for (int t = 0; t < N; ++t) {
    const int64_t j = threadIdx.x + int64_t{kSoftmaxThreads} * t;
    sv[t] = -INFINITY;
    if (j >= a && j < e) sv[t] = (kRelPos ? s[j] + uk_row[j] + bd_row[j] + vp_row[j] : s[j]) * scale;
    row_max = fmaxf(row_max, sv[t]);
  }
  row_max = block_reduce<true>(row_max, red);  // also: every score of the row has been read
  float sum = 0.0f;
#pragma unroll
  for (int t = 0; t < N; ++t) {
    sv[t] = sv[t] == -INFINITY ? 0.0f : expf(sv[t] - row_max);
    sum += sv[t];
  }
  sum = block_reduce<false>(sum, red);
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // sum is 0 only for padding rows (all keys invisible)
#pragma unroll
  for (int t = 0; t < N; ++t) {
    const int64_t j = threadIdx.x + int64_t{kSoftmaxThreads} * t;
    if (j < steps) p[j] = from_f32<T>(sv[t] * inv);
  }
}

template <typename T, int N>
void launch_softmax(const RelPosScores& sc, cudaStream_t stream) {
  const int64_t rows = sc.heads * sc.nb * sc.steps;
  auto* kernel = sc.bd != nullptr ? rel_pos_softmax_kernel<T, N, true> : rel_pos_softmax_kernel<T, N, false>;
  kernel<<<static_cast<unsigned>(rows), kSoftmaxThreads, 0, stream>>>(
      sc.ac, sc.bd, sc.uk, sc.vp, sc.lengths, sc.nb, sc.steps, sc.ld_ac, sc.ld_bd, 2 * sc.steps - 1, sc.left,
      sc.right, sc.scale);
}

}  // namespace

void launch_rel_pos_bias_dots(Dt dt, const void* k, const void* pos, const void* pos_bias_u,
                              const void* pos_bias_v, float* uk, float* vp, int64_t nb, int64_t steps,
                              int64_t heads, int64_t dk, cudaStream_t stream) {
  const int64_t n_pos = 2 * steps - 1, rows = heads * (nb * steps + n_pos);
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    bias_dots_kernel<T><<<grid_for(rows * 32), kThreads, 0, stream>>>(
        static_cast<const T*>(k), static_cast<const T*>(pos), static_cast<const T*>(pos_bias_u),
        static_cast<const T*>(pos_bias_v), uk, vp, nb, steps, heads, dk, n_pos);
  });
}

int64_t rel_pos_softmax_max_steps() { return int64_t{kSoftmaxThreads} * 32; }

void launch_rel_pos_softmax(Dt dt, const RelPosScores& scores, cudaStream_t stream) {
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    const int64_t per_thread = (scores.steps + kSoftmaxThreads - 1) / kSoftmaxThreads;
    if (per_thread <= 1)
      launch_softmax<T, 1>(scores, stream);
    else if (per_thread <= 2)
      launch_softmax<T, 2>(scores, stream);
    else if (per_thread <= 4)
      launch_softmax<T, 4>(scores, stream);
    else if (per_thread <= 8)
      launch_softmax<T, 8>(scores, stream);
    else if (per_thread <= 16)
      launch_softmax<T, 16>(scores, stream);
    else
      launch_softmax<T, 32>(scores, stream);
  });
}

}  // namespace steno::ops::cuda
