// Full attention on the tensor cores, flash-attention style (include/steno/ops/attention.h): plain self-attention
// with a key padding mask (Sortformer's Transformer) and NeMo's relative-position attention (the FastConformer's),
// in f16/bf16, the T x T scores never leaving the chip. Where the GEMM path (attention_cuda.cc) writes and
// rereads f32 score matrices (about 4 GB a layer for the Conformer at 32 x 750 frames), these read q, k, v (and
// the pos rows) once per 64 queries.
//
// A block takes 64 queries [q0, q0 + 64) of one (item, head), four warps of 16 rows. For every 64-key tile
// [k0, k0 + 64) it stages K and V (and, for relative positions, the 128 pos rows the tile's offsets touch) in
// shared memory with asynchronous copies, then each warp, with mma.m16n8k16 (flash_mma.cuh) and everything in
// registers:
//   S = Q_w · K_tileᵀ (16 x 64, f32; Q_w's fragments are loaded once per block),
//   relative positions: score (i, j) uses pos row c = T-1-i+j (NeMo's rel_shift). Warp w's 16 rows need the 80
//     pos rows from cbase + 48 - 16w (cbase = T-1-(q0+63)+k0): BD = Q_w · pos_wᵀ (16 x 80) goes through a
//     per-warp shared tile, from which row r reads columns 15 - r + j; then, in the GEMM path's order,
//     s = (S + u·k_j + BD + v·pos_c) * scale with the f32 bias terms of launch_rel_pos_bias_dots;
//   plain: s = S * scale;
//   the online softmax (running max per row, keys at or past the item's length masked), the probabilities rounded
//   to the storage type straight into the A fragments of P·V, and O += P·V after O's rows are rescaled by the
//   change of their running max. The row sums are kept per lane and joined at the end.
// Rows at or past the length come out as zeros, as on the GEMM path. The rounding of P differs from the GEMM
// path's (unnormalised here, normalised there), well within the 16-bit tolerances the tests hold both to.
#include <cfloat>
#include <cstdint>

#include "flash_attention_launch.h"
#include "flash_mma.cuh"
#include "flash_tiles.cuh"

namespace steno::ops::cuda {

namespace {

using flash::kKeys;
using flash::kRows;
using flash::kWarps;
using flash::tile_ld;

constexpr int kBand = 80;            // pos rows (BD columns) one warp uses per key tile
constexpr int kPosRows = 2 * kKeys;  // pos rows a block stages per key tile (127 used)

template <typename T, int DP, bool kRelPos>
struct Shared {
  static constexpr int ld = tile_ld<DP>();
  T q[kRows * ld];
  T k[kKeys * ld];
  T v[kKeys * ld];
  T pos[kRelPos ? kPosRows * ld : 8];
  float bd[kRelPos ? kWarps * 16 * kBand : 4];
  float uk[kRelPos ? kKeys : 4];
  float vp[kRelPos ? kPosRows : 4];
};

struct Args {
  const void *q, *k, *v;
  const void* pos;              // relative positions: row c is offset T-1-c, c in [0, 2T-1)
  const float *uk, *vp;         // relative positions: [H][B][T], [H][2T-1]
  void* out;
  const int32_t* lengths;
  int64_t batch, steps, heads;
  int dk;
  float scale;
  bool vec;
};

template <typename T, int DP, bool kRelPos>
__global__ void __launch_bounds__(kWarps * 32) flash_attention_kernel(Args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Sh = Shared<T, DP, kRelPos>;
  constexpr int ld = Sh::ld;
  extern __shared__ __align__(128) unsigned char smem[];
  Sh& sh = *reinterpret_cast<Sh*>(smem);

  T* out = static_cast<T*>(a.out);
  const int64_t b = blockIdx.z, h = blockIdx.y, q0 = int64_t{blockIdx.x} * kRows;
  const int64_t T_ = a.steps, width = a.heads * a.dk, col0 = h * a.dk, n_pos = 2 * T_ - 1;
  const int64_t len = a.lengths[b];
  const int dk = a.dk;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  if (q0 >= len) {  // every row of this block is past the length: zeros
    for (int i = threadIdx.x; i < kRows * dk; i += blockDim.x) {
      const int64_t row = q0 + i / dk;
      if (row < T_) out[(b * T_ + row) * width + col0 + i % dk] = from_f32<T>(0.0f);
    }
    return;
  }
  const T* qb = static_cast<const T*>(a.q) + b * T_ * width;
  const T* kb = static_cast<const T*>(a.k) + b * T_ * width;
  const T* vb = static_cast<const T*>(a.v) + b * T_ * width;
  flash::load_rows<T, DP>(sh.q, kRows, qb, q0, T_, width, col0, dk, a.vec);
  flash::wait_async_copies();
  __syncthreads();

  // Q_w as A fragments, one per 16 columns of the head (ldmatrix: matrices rows 0-7 / 8-15 x columns 0-7 / 8-15).
  uint32_t qf[DP / 16][4];
#pragma unroll
  for (int kc = 0; kc < DP / 16; ++kc)
    flash::ldmatrix_x4(qf[kc], &sh.q[(warp * 16 + lane % 8 + 8 * ((lane / 8) % 2)) * ld + kc * 16 + 8 * (lane / 16)]);

  float o[DP / 8][4];
#pragma unroll
  for (int n = 0; n < DP / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_run[2] = {-FLT_MAX, -FLT_MAX}, l_run[2] = {0.0f, 0.0f};  // rows g and g + 8 (l: this lane's columns)
  const int cw = kKeys - 16 - 16 * warp;  // this warp's first pos row in the tile (48 - 16w)
  float* bd_w = sh.bd + (kRelPos ? warp * 16 * kBand : 0);

  for (int64_t k0 = 0; k0 < len; k0 += kKeys) {
    __syncthreads();  // the previous tile is no longer read
    flash::load_rows<T, DP>(sh.k, kKeys, kb, k0, T_, width, col0, dk, a.vec);
    flash::load_rows<T, DP>(sh.v, kKeys, vb, k0, T_, width, col0, dk, a.vec);
    const int64_t cbase = (T_ - 1) - (q0 + kRows - 1) + k0;
    if constexpr (kRelPos) {
      flash::load_rows<T, DP>(sh.pos, kPosRows, static_cast<const T*>(a.pos), cbase, n_pos, width, col0, dk, a.vec);
      const float* ukb = a.uk + (h * a.batch + b) * T_;
      const float* vph = a.vp + h * n_pos;
      for (int i = threadIdx.x; i < kKeys; i += blockDim.x) sh.uk[i] = k0 + i < T_ ? ukb[k0 + i] : 0.0f;
      for (int i = threadIdx.x; i < kPosRows; i += blockDim.x) {
        const int64_t c = cbase + i;
        sh.vp[i] = c >= 0 && c < n_pos ? vph[c] : 0.0f;
      }
    }
    flash::wait_async_copies();
    __syncthreads();

    // S = Q_w · Kᵀ: eight 8-key tiles; K's rows (keys) x 16 columns give B fragments without transposing.
    float s[kKeys / 8][4];
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int n2 = 0; n2 < kKeys / 16; ++n2)
#pragma unroll
      for (int kc = 0; kc < DP / 16; ++kc) {
        uint32_t bf[4];
        flash::ldmatrix_x4(bf, &sh.k[(n2 * 16 + lane % 8 + 8 * (lane / 16)) * ld + kc * 16 + 8 * ((lane / 8) % 2)]);
        flash::mma_16816<T>(s[2 * n2], qf[kc], bf[0], bf[1]);
        flash::mma_16816<T>(s[2 * n2 + 1], qf[kc], bf[2], bf[3]);
      }

    if constexpr (kRelPos) {
      // BD = Q_w · pos_wᵀ, 16-column pieces through the warp's shared tile.
#pragma unroll
      for (int n2 = 0; n2 < kBand / 16; ++n2) {
        float c[2][4] = {};
#pragma unroll
        for (int kc = 0; kc < DP / 16; ++kc) {
          uint32_t bf[4];
          flash::ldmatrix_x4(
              bf, &sh.pos[(cw + n2 * 16 + lane % 8 + 8 * (lane / 16)) * ld + kc * 16 + 8 * ((lane / 8) % 2)]);
          flash::mma_16816<T>(c[0], qf[kc], bf[0], bf[1]);
          flash::mma_16816<T>(c[1], qf[kc], bf[2], bf[3]);
        }
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int col = n2 * 16 + half * 8 + 2 * t;
          *reinterpret_cast<float2*>(&bd_w[g * kBand + col]) = make_float2(c[half][0], c[half][1]);
          *reinterpret_cast<float2*>(&bd_w[(g + 8) * kBand + col]) = make_float2(c[half][2], c[half][3]);
        }
      }
      __syncwarp();
    }

    // The scores of rows g (e = 0, 1) and g + 8 (e = 2, 3), masked; the tile's row maxima.
    float tile_max[2] = {-FLT_MAX, -FLT_MAX};
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = n * 8 + 2 * t + (e & 1), r = g + 8 * (e >> 1);
        float x = s[n][e];
        if constexpr (kRelPos) {
          const int shift = 15 - r + col;  // BD column, and pos row past cw, of key column col in row r
          x = (x + sh.uk[col] + bd_w[r * kBand + shift] + sh.vp[cw + shift]) * a.scale;
        } else {
          x *= a.scale;
        }
        x = k0 + col < len ? x : -FLT_MAX;
        s[n][e] = x;
        tile_max[e >> 1] = fmaxf(tile_max[e >> 1], x);
      }
    float alpha[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      tile_max[i] = fmaxf(tile_max[i], __shfl_xor_sync(0xffffffffu, tile_max[i], 1));
      tile_max[i] = fmaxf(tile_max[i], __shfl_xor_sync(0xffffffffu, tile_max[i], 2));
      const float m_new = fmaxf(m_run[i], tile_max[i]);
      alpha[i] = __expf(m_run[i] - m_new);  // 0 on the first tile (m_run = -FLT_MAX)
      m_run[i] = m_new;
      l_run[i] *= alpha[i];
    }
#pragma unroll
    for (int n = 0; n < DP / 8; ++n) {
      o[n][0] *= alpha[0];
      o[n][1] *= alpha[0];
      o[n][2] *= alpha[1];
      o[n][3] *= alpha[1];
    }

    // P in the storage type, straight into A fragments: 16 keys (two 8-key tiles) per fragment, in A's order (row
    // g keys 0-7, row g+8 keys 0-7, row g keys 8-15, row g+8 keys 8-15), which is C's order tile by tile.
    uint32_t pf[kKeys / 16][4];
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float* sn = s[2 * kk + half];
        float p[4], pr[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = (2 * kk + half) * 8 + 2 * t + (e & 1);
          p[e] = k0 + col < len ? __expf(sn[e] - m_run[e >> 1]) : 0.0f;
        }
        pf[kk][2 * half] = flash::pack2<T>(p[0], p[1], pr[0], pr[1]);
        pf[kk][2 * half + 1] = flash::pack2<T>(p[2], p[3], pr[2], pr[3]);
        l_run[0] += pr[0] + pr[1];
        l_run[1] += pr[2] + pr[3];
      }

    // O += P · V: V's rows (keys) read transposed give B fragments, two 8-column tiles of O at a time.
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk)
#pragma unroll
      for (int n2 = 0; n2 < DP / 16; ++n2) {
        uint32_t bf[4];
        flash::ldmatrix_x4_trans(bf, &sh.v[(kk * 16 + lane % 8 + 8 * ((lane / 8) % 2)) * ld + n2 * 16 + 8 * (lane / 16)]);
        flash::mma_16816<T>(o[2 * n2], pf[kk], bf[0], bf[1]);
        flash::mma_16816<T>(o[2 * n2 + 1], pf[kk], bf[2], bf[3]);
      }
  }

  // out = O / l for rows before the length, zeros after; l joined over the row's four lanes.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], 1);
    l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], 2);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int64_t row = q0 + warp * 16 + g + 8 * i;
    if (row >= T_) continue;
    const bool valid = row < len;
    T* orow = out + (b * T_ + row) * width + col0;
#pragma unroll
    for (int n = 0; n < DP / 8; ++n) {
      const int col = n * 8 + 2 * t;
      if (col < dk) orow[col] = from_f32<T>(valid ? o[n][2 * i] / l_run[i] : 0.0f);
      if (col + 1 < dk) orow[col + 1] = from_f32<T>(valid ? o[n][2 * i + 1] / l_run[i] : 0.0f);
    }
  }
#else
  __trap();  // built for sm_80 and newer only (the build targets sm_90)
#endif
}

template <typename T, int DP, bool kRelPos>
void launch(const Args& a, cudaStream_t stream) {
  constexpr size_t bytes = sizeof(Shared<T, DP, kRelPos>);
  // Over 48 KB of shared memory needs the kernel's opt-in, on the current device (cheap; every launch asks). A
  // refusal makes the launch fail, which the caller's check_launch reports.
  (void)cudaFuncSetAttribute(flash_attention_kernel<T, DP, kRelPos>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(bytes));
  const dim3 grid(static_cast<unsigned>((a.steps + kRows - 1) / kRows), static_cast<unsigned>(a.heads),
                  static_cast<unsigned>(a.batch));
  flash_attention_kernel<T, DP, kRelPos><<<grid, kWarps * 32, bytes, stream>>>(a);
}

template <typename T, bool kRelPos>
void launch_dk(Args& a, cudaStream_t stream) {
  a.vec = flash::vector_rows<T>(a.dk, {a.q, a.k, a.v, kRelPos ? a.pos : a.q});
  if (a.dk <= 16) launch<T, 16, kRelPos>(a, stream);
  else if (a.dk <= 32) launch<T, 32, kRelPos>(a, stream);
  else if (a.dk <= 64) launch<T, 64, kRelPos>(a, stream);
  else launch<T, 128, kRelPos>(a, stream);
}

template <bool kRelPos>
void launch_dt(Dt dt, Args& a, cudaStream_t stream) {
  if (dt == Dt::kF16) launch_dk<__half, kRelPos>(a, stream);
  else launch_dk<__nv_bfloat16, kRelPos>(a, stream);
}

}  // namespace

bool flash_self_attention_supported(Dt dt, int64_t dk) { return dt != Dt::kF32 && dk >= 1 && dk <= 128; }
bool flash_rel_pos_attention_supported(Dt dt, int64_t dk) { return dt != Dt::kF32 && dk >= 1 && dk <= 128; }

void launch_flash_self_attention(Dt dt, const void* q, const void* k, const void* v, void* out,
                                 const int32_t* lengths, int64_t batch, int64_t steps, int64_t heads, int64_t dk,
                                 float scale, cudaStream_t stream) {
  Args a{q, k, v, nullptr, nullptr, nullptr, out, lengths, batch, steps, heads, static_cast<int>(dk), scale, false};
  launch_dt<false>(dt, a, stream);
}

void launch_flash_rel_pos_attention(Dt dt, const void* q, const void* k, const void* v, const void* pos,
                                    const float* uk, const float* vp, void* out, const int32_t* lengths,
                                    int64_t batch, int64_t steps, int64_t heads, int64_t dk, float scale,
                                    cudaStream_t stream) {
  Args a{q, k, v, pos, uk, vp, out, lengths, batch, steps, heads, static_cast<int>(dk), scale, false};
  launch_dt<true>(dt, a, stream);
}

}  // namespace steno::ops::cuda
