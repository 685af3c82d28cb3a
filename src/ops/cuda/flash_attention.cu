// Full attention on the tensor cores, flash-attention style (include/steno/ops/attention.h): plain self-attention
// with a key padding mask (Sortformer's Transformer) and NeMo's relative-position attention (the FastConformer's),
// in f16/bf16, the T x T scores never leaving the chip. Where the GEMM path (attention_cuda.cc) writes and
// rereads f32 score matrices (about 4 GB a layer for the Conformer at 32 x 750 frames), these read q, k, v (and
// the pos rows) once per 128 queries.
//
// A block takes 128 queries [q0, q0 + 128) of one (item, head), eight warps of 16 rows. It walks the keys in
// 64-key tiles [k0, k0 + 64), staged in shared memory with asynchronous copies one tile ahead: while the warps
// compute on tile i, tile i + 1's K and V rows land in the other buffer, so the copies' latency hides behind the
// tensor cores' work (the earlier kernel, a tile at a time, 64 queries, waited on every tile's copies: 0.78 ms a
// layer at the 0.6b encoder's 32 x 45 s, ~30 % of the encoder). For relative positions the tile's scores use the
// 192 pos rows from cbase = T-1-(q0+127)+k0; the next tile's window is the same shifted by 64, so the pos rows live
// in a ring of 256 (row c in slot c mod 256) and each tile copies only its 64 new rows (and their v·pos terms).
// Each warp, with mma.m16n8k16 (flash_mma.cuh) and everything in registers:
//   S = Q_w · K_tileᵀ (16 x 64, f32; Q_w's fragments are loaded once per block),
//   relative positions: score (i, j) uses pos row c = T-1-i+j (NeMo's rel_shift). Warp w's 16 rows need the 80
//     pos rows from cbase + 112 - 16w: BD = Q_w · pos_wᵀ (16 x 80, ten independent accumulators) goes through a
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

constexpr int kBand = 80;                      // pos rows (BD columns) one warp uses per key tile
constexpr int kPosWindow = kRows + kKeys;      // pos rows a key tile's scores use (the last one never)
constexpr int kPosRing = kPosWindow + kKeys;   // the window and the next tile's new rows
static_assert((kPosRing & (kPosRing - 1)) == 0, "ring slots are taken with a mask");
constexpr int ring_slot(int c) { return c & (kPosRing - 1); }  // also for c < 0

template <typename T, int DP, bool kRelPos>
struct Shared {
  static constexpr int ld = tile_ld<DP>();
  T q[kRows * ld];
  T k[2][kKeys * ld];  // double-buffered key tiles
  T v[2][kKeys * ld];
  T pos[kRelPos ? kPosRing * ld : 8];
  float bd[kRelPos ? kWarps * 16 * kBand : 4];
  float uk[2][kRelPos ? kKeys : 4];
  // v·pos_c at ring slot s and again at s + kPosRing, so that a lane reads its scores' terms at its base slot
  // plus constants, without wrapping each one.
  float vp[kRelPos ? 2 * kPosRing : 4];
};
static_assert(sizeof(Shared<__nv_bfloat16, 128, true>) <= 227 * 1024, "one block per SM on sm_90");

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

// Queues the copies of key tile k0 into buffer `buf` (K, V and, for relative positions, u·k_j), and of the
// kPosCount pos rows from c0 with their v·pos_c into the ring; zeros where a row does not exist.
template <int kPosCount, typename T, int DP, bool kRelPos>
__device__ __forceinline__ void load_key_tile(Shared<T, DP, kRelPos>& sh, const Args& a, int buf, int k0, int c0) {
  const int64_t b = blockIdx.z, h = blockIdx.y, width = a.heads * a.dk;
  const int T_ = static_cast<int>(a.steps), col0 = static_cast<int>(h) * a.dk;
  const T* kb = static_cast<const T*>(a.k) + b * T_ * width;
  const T* vb = static_cast<const T*>(a.v) + b * T_ * width;
  flash::load_rows<T, DP, kKeys>(sh.k[buf], kb, k0, T_, width, col0, a.dk, a.vec);
  flash::load_rows<T, DP, kKeys>(sh.v[buf], vb, k0, T_, width, col0, a.dk, a.vec);
  if constexpr (kRelPos) {
    const int n_pos = 2 * T_ - 1;
    flash::load_rows_to<T, DP, kPosCount>(
        sh.pos, [c0](int r) { return ring_slot(c0 + r); }, static_cast<const T*>(a.pos), c0, n_pos, width, col0,
        a.dk, a.vec);
    const float* ukb = a.uk + (h * a.batch + b) * T_;
    const float* vph = a.vp + h * n_pos;
    static_assert(kKeys <= flash::kThreads, "one u·k term per thread");
    if (threadIdx.x < kKeys) {
      const int i = threadIdx.x;
      const bool ok = k0 + i < T_;
      flash::copy_async_4(&sh.uk[buf][i], ok ? ukb + k0 + i : ukb, ok);
    }
    for (int i = threadIdx.x; i < kPosCount; i += flash::kThreads) {
      const int c = c0 + i;
      const bool ok = c >= 0 && c < n_pos;
      flash::copy_async_4(&sh.vp[ring_slot(c)], ok ? vph + c : vph, ok);
      flash::copy_async_4(&sh.vp[ring_slot(c) + kPosRing], ok ? vph + c : vph, ok);
    }
  }
}

template <typename T, int DP, bool kRelPos>
__global__ void __launch_bounds__(kWarps * 32) flash_attention_kernel(Args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Sh = Shared<T, DP, kRelPos>;
  constexpr int ld = Sh::ld;
  extern __shared__ __align__(128) unsigned char smem[];
  Sh& sh = *reinterpret_cast<Sh*>(smem);

  T* out = static_cast<T*>(a.out);
  const int64_t b = blockIdx.z, h = blockIdx.y, q0 = int64_t{blockIdx.x} * kRows;
  const int64_t T_ = a.steps, width = a.heads * a.dk, col0 = h * a.dk;
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
  // The first key tile's window of pos rows starts here; tile k0's at cbase0 + k0.
  const int64_t cbase0 = (T_ - 1) - (q0 + kRows - 1);
  const T* qb = static_cast<const T*>(a.q) + b * T_ * width;
  flash::load_rows<T, DP, kRows>(sh.q, qb, static_cast<int>(q0), static_cast<int>(T_), width,
                                 static_cast<int>(col0), dk, a.vec);
  load_key_tile<kPosWindow>(sh, a, 0, 0, static_cast<int>(cbase0));
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
  // Running maxima of the scores and sums of P, rows g and g + 8 (l: this lane's columns). P = __expf(s - m), which
  // nvcc turns into one FFMA and an ex2 (the earlier kernel's select on the mask kept the subtraction apart: 10 %
  // of this kernel's time, for a rounding step less accurate). Any change of P's rounding moves the near-tie
  // decisions of the benchmarks' random-weight model and so its decoding time: this one 0.654 -> 0.644 steps a frame
  // at 32 x 45 s (+0.9 ms of decoding); 2^(s * c - m * c) with c = scale * log2(e), 1.5 % faster still, took
  // 128 x 10 s from 5 to 18 ms on one row's long run of emissions (bench/results/h200-flash-pipelined).
  float m_run[2] = {-FLT_MAX, -FLT_MAX}, l_run[2] = {0.0f, 0.0f};
  const int cw = kRows - 16 - 16 * warp;  // this warp's first pos row in a tile's window (112 - 16w)
  float* bd_w = sh.bd + (kRelPos ? warp * 16 * kBand : 0);

  // Each lane's ldmatrix row within a tile, in bytes: K's B fragments (rows = keys), V's transposed ones, and the
  // row offset the pos band adds per 16 columns.
  constexpr uint32_t kElem = sizeof(T);
  const uint32_t k_lane = ((lane % 8 + 8 * (lane / 16)) * ld + 8 * ((lane / 8) % 2)) * kElem;
  const uint32_t v_lane = ((lane % 8 + 8 * ((lane / 8) % 2)) * ld + 8 * (lane / 16)) * kElem;
  const int pos_lane_row = lane % 8 + 8 * (lane / 16);
  const uint32_t pos_lane_col = 8 * ((lane / 8) % 2) * kElem, pos_base = flash::smem_u32(sh.pos);
  // Row r = g + 8h of key column col = 8n + 2t + e' reads BD element r * kBand + 15 - r + col = 79r + 15 + col:
  // a lane's base plus constants.
  const float* bd_lane = bd_w + 79 * g + 2 * t + 15;

  for (int64_t k0 = 0, tile = 0; k0 < len; k0 += kKeys, ++tile) {
    const int buf = static_cast<int>(tile & 1);
    // The next tile's copies go out first, into the buffer the previous tile used (every warp is past it: the
    // barrier closing the last iteration) and the ring slots of pos rows no later tile reads.
    if (k0 + kKeys < len)
      load_key_tile<kKeys>(sh, a, buf ^ 1, static_cast<int>(k0 + kKeys), static_cast<int>(cbase0 + k0 + kPosWindow));
    const uint32_t kt = flash::smem_u32(sh.k[buf]) + k_lane, vt = flash::smem_u32(sh.v[buf]) + v_lane;
    const float* uk_lane = sh.uk[buf] + 2 * t;
    const int n_valid = len - k0 < kKeys ? static_cast<int>(len - k0) : kKeys;  // keys of this tile before len
    const int pw = static_cast<int>(cbase0 + k0) + cw;  // the pos row of this warp's first band column

    if constexpr (kRelPos) {
      // BD = Q_w · pos_wᵀ (16 x 80) into the warp's shared tile: all ten 8-column accumulators at once, so that
      // the tensor cores have ten independent chains (two at a time left them waiting on each MMA's latency).
      float c[kBand / 8][4] = {};
      uint32_t row[kBand / 16];
#pragma unroll
      for (int n2 = 0; n2 < kBand / 16; ++n2)
        row[n2] = pos_base + ring_slot(pw + n2 * 16 + pos_lane_row) * ld * kElem + pos_lane_col;
#pragma unroll
      for (int kc = 0; kc < DP / 16; ++kc)
#pragma unroll
        for (int n2 = 0; n2 < kBand / 16; ++n2) {
          uint32_t bf[4];
          flash::ldmatrix_x4(bf, row[n2] + kc * 16 * kElem);
          flash::mma_16816<T>(c[2 * n2], qf[kc], bf[0], bf[1]);
          flash::mma_16816<T>(c[2 * n2 + 1], qf[kc], bf[2], bf[3]);
        }
#pragma unroll
      for (int n = 0; n < kBand / 8; ++n) {
        const int col = n * 8 + 2 * t;
        *reinterpret_cast<float2*>(&bd_w[g * kBand + col]) = make_float2(c[n][0], c[n][1]);
        *reinterpret_cast<float2*>(&bd_w[(g + 8) * kBand + col]) = make_float2(c[n][2], c[n][3]);
      }
      __syncwarp();
    }

    // S = Q_w · Kᵀ: eight 8-key tiles; K's rows (keys) x 16 columns give B fragments without transposing.
    float s[kKeys / 8][4];
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kc = 0; kc < DP / 16; ++kc)
#pragma unroll
      for (int n2 = 0; n2 < kKeys / 16; ++n2) {
        uint32_t bf[4];
        flash::ldmatrix_x4(bf, kt + (n2 * 16 * ld + kc * 16) * kElem);
        flash::mma_16816<T>(s[2 * n2], qf[kc], bf[0], bf[1]);
        flash::mma_16816<T>(s[2 * n2 + 1], qf[kc], bf[2], bf[3]);
      }

    // The scores of rows g (e = 0, 1) and g + 8 (e = 2, 3), masked; the tile's row maxima.
    const float* vp_lane = sh.vp + ring_slot(pw) + 15 - g + 2 * t;
    float tile_max[2] = {-FLT_MAX, -FLT_MAX};
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h8 = 8 * (e >> 1), cc = n * 8 + (e & 1);  // row g + h8; key column cc + 2t
        float x = s[n][e];
        if constexpr (kRelPos) {
          x = (x + uk_lane[cc] + bd_lane[79 * h8 + cc] + vp_lane[cc - h8]) * a.scale;
        } else {
          x *= a.scale;
        }
        x = cc + 2 * t < n_valid ? x : -FLT_MAX;
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
        for (int e = 0; e < 4; ++e)  // masked keys (-FLT_MAX) come out as 0: the row's maximum is a real score
          p[e] = __expf(sn[e] - m_run[e >> 1]);
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
        flash::ldmatrix_x4_trans(bf, vt + (kk * 16 * ld + n2 * 16) * kElem);
        flash::mma_16816<T>(o[2 * n2], pf[kk], bf[0], bf[1]);
        flash::mma_16816<T>(o[2 * n2 + 1], pf[kk], bf[2], bf[3]);
      }

    // The next tile's copies have landed, and every warp is done with this tile's buffers and band.
    flash::wait_async_copies();
    __syncthreads();
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
