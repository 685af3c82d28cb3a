// The persistent TDT decoder kernel (tdt_persistent_kernel.h says what it does and why).
//
// Work is split into tiles of 16 rows: in every GEMM phase a block takes whole output tiles (16 rows x 16
// columns, or the four gate tiles of 16 LSTM units), stages the tile's 16 input rows (and, where shared memory
// allows, its weights) with cp.async and splits the reduction over its 8 warps, which meet in shared memory for
// the sum and the fused epilogue. Each block takes a contiguous range of a phase's tiles, column tile by column
// tile, the same range in every step (PersistentRoles: spread over the whole grid, or on blocks dedicated to the
// phase whose weights then never leave shared memory), so consecutive tiles reuse the staged weights and an
// element of the LSTM's cell state is only ever touched by one thread. Data written during the kernel is read
// through L2 (__ldcg, cp.async.cg) because L1 is not coherent across SMs.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <type_traits>

#include "launch_common.cuh"  // src/ops/cuda: to_f32, from_f32, dispatch_dt
#include "tdt_persistent_kernel.h"
#include "tdt_rules.cuh"

namespace steno::asr::cuda_tdt {
namespace {

namespace cg = cooperative_groups;
using ops::cuda::dispatch_dt;
using ops::cuda::from_f32;
using ops::cuda::to_f32;

constexpr int kTile = 16;
constexpr int kTileElems = kTile * kTile;
constexpr int kWarps = kPersistentThreads / 32;
constexpr int kMaxAcc = 4;  // weight tiles per output tile: the LSTM's four gates
static_assert(kPersistentThreads == kTileElems, "the epilogues give each thread one element of a tile");
static_assert(kMaxAcc == kPersistentWeightSlots, "the LSTM's four gate tiles fill a block's weight slots");
static_assert(kPersistentWeightSlots == 4, "Phase::staged is initialized with four slots' -1 in the kernel");

// The rows' decoding state, identical in every block (each block makes every decision itself).
struct RowTable {
  int t[kPersistentMaxRows], len[kPersistentMaxRows], count[kPersistentMaxRows], sym[kPersistentMaxRows];
  int last_ts[kPersistentMaxRows], steps[kPersistentMaxRows], active[kPersistentMaxRows];
  int label[kPersistentMaxRows];  // this step's emitted token, or -1: the LSTM advances where >= 0
};

constexpr size_t align128(size_t n) { return (n + 127) / 128 * 128; }

// Shared memory: the row table; the A tile (16 staged input rows), which the warps' partial tiles reuse once the
// products are done; and, when it fits (PersistentWeights::resident), the output tile's weights (up to four
// gates of 16 rows). Staged rows are padded by 16 bytes against bank conflicts.
struct SmemLayout {
  int ld = 0;  // leading dimension of the staged A and weight rows
  size_t a = 0, w = 0, streamed = 0, resident = 0;
  __host__ __device__ SmemLayout(const PersistentWeights& pw, size_t elem) {
    int kmax = pw.H > pw.J ? pw.H : pw.J;
    for (int l = 0; l < pw.layers; ++l) kmax = pw.k_layer[l] > kmax ? pw.k_layer[l] : kmax;
    ld = kmax + static_cast<int>(16 / elem);
    a = align128(sizeof(RowTable));
    const size_t a_bytes = static_cast<size_t>(kTile) * ld * elem;
    const size_t red_bytes = static_cast<size_t>(kWarps) * kMaxAcc * kTileElems * sizeof(float);
    w = a + align128(a_bytes > red_bytes ? a_bytes : red_bytes);
    streamed = w;
    resident = w + static_cast<size_t>(kMaxAcc) * kTile * ld * elem;
  }
};

// cp.async through L2 only (.cg): the rows staged here may have been written by other blocks during the kernel,
// and L1 is not coherent across SMs.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem));
}

// Waits for this thread's copies, then for the block's.
__device__ __forceinline__ void finish_copies() {
  asm volatile("cp.async.wait_all;\n" ::);
  __syncthreads();
}

// Starts copying `rows` rows of `width` elements (a multiple of 16) into columns [col0, col0 + width) of a staged
// tile with leading dimension ld; src(q) is row q's source, or nullptr for zeros. finish_copies() completes it.
// The thread's (row, vector) position advances without a division per copy: staging is most of a phase's
// instructions.
template <typename T, typename Src>
__device__ __forceinline__ void stage(T* dst, int ld, int col0, int width, Src src, int rows = kTile) {
  constexpr int kVec = 16 / sizeof(T);
  const int per_row = width / kVec;
  const int step_rows = kPersistentThreads / per_row, step_vecs = kPersistentThreads - step_rows * per_row;
  int q = threadIdx.x / per_row, v = threadIdx.x - q * per_row;
  while (q < rows) {
    const T* s = src(q);
    T* d = dst + q * ld + col0 + v * kVec;
    if (s != nullptr)
      cp_async16(d, s + v * kVec);
    else
      *reinterpret_cast<uint4*>(d) = make_uint4(0u, 0u, 0u, 0u);
    q += step_rows;
    v += step_vecs;
    if (v >= per_row) {
      v -= per_row;
      ++q;
    }
  }
}

// The best (v, i) by `beats` over aligned groups of `group` lanes (a power of two up to 32), in each group's
// first lane. Every lane of the warp takes part.
__device__ __forceinline__ void group_argmax(float& v, int& i, int group) {
  for (int offset = group / 2; offset > 0; offset >>= 1) {
    const float ov = __shfl_down_sync(0xffffffffu, v, offset, group);
    const int oi = __shfl_down_sync(0xffffffffu, i, offset, group);
    if (beats(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
}

// A token's logit and index as one key whose largest value over a row is its first maximum (the larger logit,
// then the smaller index: beats()), so that tiles can combine by atomicMax. The float's bits are made orderable
// as unsigned (negatives flipped, the sign bit set on the others; -0 taken as +0 as `==` does). Logits are
// finite. Key 0 is below every token's key.
__device__ __forceinline__ unsigned long long token_key(float v, int index) {
  unsigned u = __float_as_uint(v == 0.0f ? 0.0f : v);
  u = (u & 0x80000000u) != 0 ? ~u : u | 0x80000000u;
  return static_cast<unsigned long long>(u) << 32 | (0xffffffffu - static_cast<unsigned>(index));
}
__device__ __forceinline__ int key_token(unsigned long long key) {
  return static_cast<int>(0xffffffffu - static_cast<unsigned>(key & 0xffffffffu));
}

// A phase's items are (column tile ct, row tile): item ct * row_tiles + row tile. A block takes a contiguous
// range of them, so consecutive items share their weight tiles; `slot` is where in the block's shared memory
// the weight tiles of column tile ct live (PersistentRoles).
struct Items {
  int first = 0, last = 0;  // items [first, last)
  int ct0 = 0, slot0 = 0;   // dedicated roles: column tile ct is in slot slot0 + ct - ct0; shared roles: slot 0
  bool dedicated = false;
  __device__ int slot(int ct) const { return dedicated ? slot0 + ct - ct0 : 0; }
};

// Shared roles: the phase's items split evenly over the grid.
__device__ __forceinline__ Items shared_items(int items) {
  const int chunk = (items + gridDim.x - 1) / gridDim.x;
  Items it;
  it.first = min(items, static_cast<int>(blockIdx.x) * chunk);
  it.last = min(items, it.first + chunk);
  return it;
}

// Dedicated roles: column tiles [c_first, c_first + chunk) of `tiles` (all their row tiles) for this block,
// whose role index among the blocks of the phase is `index` (out of range: no items).
__device__ __forceinline__ Items dedicated_items(int index, int blocks, int chunk, int tiles, int row_tiles,
                                                 int slot0) {
  Items it;
  it.dedicated = true;
  if (index < 0 || index >= blocks) return it;
  it.ct0 = min(tiles, index * chunk);
  it.first = it.ct0 * row_tiles;
  it.last = min(tiles, it.ct0 + chunk) * row_tiles;
  it.slot0 = slot0;
  return it;
}

// Each warp's share of A[16, k_len] · W_gᵀ for NACC weight tiles W_g (16 rows of a row-major matrix with
// leading dimension ldw, in global or shared memory): warp w takes the k-steps w, w + 8, ... and leaves its
// partial tile g in red[(w * NACC + g) * 256 ...] (row-major 16 x 16). `red` overlays the A tile, so the block
// meets before the partials are stored, and again after, when they are ready to be summed. Tensor cores for
// f16/bf16, FMAs for f32.
template <typename T, int NACC>
__device__ __forceinline__ void tile_partials(const T* a, int lda, const T* const (&w)[NACC], int ldw, int k_len,
                                              float* red) {
  const int warp = threadIdx.x >> 5;
  if constexpr (std::is_same_v<T, float>) {
    const int lane = threadIdx.x & 31, col = lane & 15, row0 = lane >> 4;
    float acc[NACC][8] = {};
    for (int k0 = warp * kTile; k0 < k_len; k0 += kWarps * kTile) {
#pragma unroll 4
      for (int kk = 0; kk < kTile; ++kk) {
        const int k = k0 + kk;
        float wv[NACC];
#pragma unroll
        for (int g = 0; g < NACC; ++g) wv[g] = w[g][static_cast<size_t>(col) * ldw + k];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float av = a[(row0 + 2 * i) * lda + k];
#pragma unroll
          for (int g = 0; g < NACC; ++g) acc[g][i] = fmaf(av, wv[g], acc[g][i]);
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < NACC; ++g)
#pragma unroll
      for (int i = 0; i < 8; ++i) red[(warp * NACC + g) * kTileElems + (row0 + 2 * i) * kTile + col] = acc[g][i];
  } else {
    namespace wmma = nvcuda::wmma;
    wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc[NACC];
#pragma unroll
    for (int g = 0; g < NACC; ++g) wmma::fill_fragment(acc[g], 0.0f);
    wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, T, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, T, wmma::col_major> fb;
    for (int k0 = warp * kTile; k0 < k_len; k0 += kWarps * kTile) {
      wmma::load_matrix_sync(fa, a + k0, lda);
#pragma unroll
      for (int g = 0; g < NACC; ++g) {
        wmma::load_matrix_sync(fb, w[g] + k0, ldw);
        wmma::mma_sync(acc[g], fa, fb, acc[g]);
      }
    }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < NACC; ++g)
      wmma::store_matrix_sync(red + (warp * NACC + g) * kTileElems, acc[g], kTile, wmma::mem_row_major);
  }
  __syncthreads();
}

// Element threadIdx.x of output tile g: the warps' partials summed (in a fixed order).
template <int NACC>
__device__ __forceinline__ float tile_sum(const float* red, int g) {
  float s = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) s += red[(w * NACC + g) * kTileElems + threadIdx.x];
  return s;
}

// Does a row of tile [r0, r0 + 16) satisfy `pred`? Same answer in every thread (read from the row table).
template <typename Pred>
__device__ __forceinline__ bool any_row(int r0, Pred pred) {
  bool any = false;
#pragma unroll
  for (int q = 0; q < kTile; ++q) any |= pred(r0 + q);
  return any;
}

template <typename T>
struct Phase {
  const TdtDims& d;
  const PersistentWeights& w;
  const PersistentBuffers& bf;
  const TdtCallParams& prm;
  RowTable& s;
  T* a;         // the A tile
  float* red;   // the warps' partial tiles (over the A tile)
  T* ws;        // the weight slots (w.resident): kPersistentWeightSlots x 16 rows
  int ld;       // leading dimension of a and ws
  PersistentRoles roles;
  int staged[kPersistentWeightSlots];  // which weight tile each slot holds (phase * 65536 + column tile; -1: none)

  // The NACC weight tiles of output column tile `ct` (rows row0(g) + [0, 16) of a row-major [*, K] matrix),
  // from shared memory slots slot, ... slot + NACC - 1 when they fit there: staged when the slot holds another
  // tile, so once for consecutive items of a column tile, and once per decode under dedicated roles.
  template <int NACC, typename RowOf>
  __device__ void weight_tiles(int phase, int ct, int slot, const T* mat, int K, RowOf row0, const T* (&out)[NACC],
                               int& ldw) {
    if (!w.resident) {
#pragma unroll
      for (int g = 0; g < NACC; ++g) out[g] = mat + static_cast<size_t>(row0(g)) * K;
      ldw = K;
      return;
    }
    T* dst = ws + static_cast<size_t>(slot) * kTile * ld;
    const int key = phase * 65536 + ct;
    if (staged[slot] != key) {
      // The NACC tiles as one copy of NACC x 16 rows (tile g's rows are consecutive rows of `mat`).
      stage(
          dst, ld, 0, K,
          [&](int q) { return mat + static_cast<size_t>(row0(q / kTile) + q % kTile) * K; }, NACC * kTile);
      staged[slot] = key;
#pragma unroll
      for (int g = 1; g < NACC; ++g) staged[slot + g] = -1;
    }
#pragma unroll
    for (int g = 0; g < NACC; ++g) out[g] = dst + g * kTile * ld;
    ldw = ld;
  }

  // This block's items of each phase under the grid's roles.
  __device__ Items lstm_items(int l, int row_tiles) const {
    const int units = w.H / kTile;
    if (roles.lstm_blocks == 0) return shared_items(units * row_tiles);
    return dedicated_items(static_cast<int>(blockIdx.x) - l * units, units, 1, units, row_tiles, 0);
  }
  __device__ Items pred_items(int row_tiles) const {
    const int tiles = w.J / kTile;
    if (roles.lstm_blocks == 0) return shared_items(tiles * row_tiles);
    return dedicated_items(static_cast<int>(blockIdx.x) - roles.lstm_blocks, roles.other_blocks, roles.pred_chunk,
                           tiles, row_tiles, 0);
  }
  __device__ Items logit_items(int row_tiles) const {
    const int tiles = w.N / kTile;
    if (roles.lstm_blocks == 0) return shared_items(tiles * row_tiles);
    return dedicated_items(static_cast<int>(blockIdx.x) - roles.lstm_blocks, roles.other_blocks,
                           roles.logit_chunk, tiles, row_tiles, roles.pred_chunk);
  }

  // One LSTM layer for the rows that emitted; the others carry their h over to the other buffer. `lp` selects
  // the buffers holding the current h of every layer.
  __device__ void lstm_layer(int l, int lp) {
    const int H = w.H, K = w.k_layer[l], in_dim = K - H;
    const int row_tiles = bf.rows / kTile;
    const T* wl = static_cast<const T*>(w.w_cat[l]);
    const T* h_old = static_cast<const T*>(bf.h[l][lp]);
    T* h_new = static_cast<T*>(bf.h[l][lp ^ 1]);
    const T* below = l == 0 ? nullptr : static_cast<const T*>(bf.h[l - 1][lp ^ 1]);
    const int r = threadIdx.x / kTile, jj = threadIdx.x % kTile;  // the thread's element, tile-relative
    const Items items = lstm_items(l, row_tiles);
    for (int item = items.first; item < items.last; ++item) {
      const int ut = item / row_tiles, r0 = item % row_tiles * kTile, u0 = ut * kTile;
      const int j = u0 + jj, row = r0 + r;
      const size_t at = static_cast<size_t>(row) * H + j;
      if (!any_row(r0, [&](int q) { return s.label[q] >= 0; })) {
        h_new[at] = __ldcg(h_old + at);
        continue;
      }
      const T* gates[kMaxAcc];
      int ldw;
      weight_tiles<kMaxAcc>(l, ut, items.slot(ut), wl, K, [&](int g) { return g * H + u0; }, gates, ldw);
      if (in_dim > 0)  // layers above 0: the layer below's new h (layer 0's input half is in x0)
        stage(a, ld, 0, in_dim,
              [&](int q) { return s.label[r0 + q] < 0 ? nullptr : below + static_cast<size_t>(r0 + q) * H; });
      stage(a, ld, in_dim, H,
            [&](int q) { return s.label[r0 + q] < 0 ? nullptr : h_old + static_cast<size_t>(r0 + q) * H; });
      finish_copies();
      tile_partials<T, kMaxAcc>(a, ld, gates, ldw, K, red);
      if (s.label[row] >= 0) {
        // PyTorch's gate order i, f, g, o. Layer 0 adds its token's row of x0 (bias included).
        const float* bias = l == 0 ? w.x0 + static_cast<size_t>(s.label[row]) * 4 * H : w.lstm_bias[l];
        const float zi = tile_sum<kMaxAcc>(red, 0) + bias[j];
        const float zf = tile_sum<kMaxAcc>(red, 1) + bias[H + j];
        const float zg = tile_sum<kMaxAcc>(red, 2) + bias[2 * H + j];
        const float zo = tile_sum<kMaxAcc>(red, 3) + bias[3 * H + j];
        float* cell = bf.c[l] + at;
        const float c_new = sigmoid(zf) * __ldcg(cell) + sigmoid(zi) * tanhf(zg);
        __stcg(cell, c_new);
        h_new[at] = from_f32<T>(tanhf(c_new) * sigmoid(zo));
      } else {
        h_new[at] = __ldcg(h_old + at);
      }
      __syncthreads();  // the next item restages the tiles
    }
  }

  // joint.pred(h) + bias for the rows that emitted (when `emitted`), then the joint's hidden layer
  // relu(enc_proj[row, t] + enc_b + pred) for every row at its current frame (zero for inactive rows).
  __device__ void pred_and_hidden(int lp, bool emitted) {
    const int H = w.H, J = w.J;
    const int row_tiles = bf.rows / kTile;
    const T* h_last = static_cast<const T*>(bf.h[w.layers - 1][lp]);
    const T* pred_w = static_cast<const T*>(w.pred_w);
    const T* enc = static_cast<const T*>(prm.enc_proj);
    T* hidden = static_cast<T*>(bf.hidden);
    const int r = threadIdx.x / kTile, jj = threadIdx.x % kTile;
    const Items items = pred_items(row_tiles);
    for (int item = items.first; item < items.last; ++item) {
      const int ct = item / row_tiles, r0 = item % row_tiles * kTile, c0 = ct * kTile;
      const int row = r0 + r, col = c0 + jj;
      const bool mma = emitted && any_row(r0, [&](int q) { return s.label[q] >= 0; });
      if (mma) {
        const T* wt[1];
        int ldw;
        weight_tiles<1>(kPersistentMaxLayers, ct, items.slot(ct), pred_w, H, [&](int) { return c0; }, wt, ldw);
        stage(a, ld, 0, H,
              [&](int q) { return s.label[r0 + q] < 0 ? nullptr : h_last + static_cast<size_t>(r0 + q) * H; });
        finish_copies();
        tile_partials<T, 1>(a, ld, wt, ldw, H, red);
      }
      float* pp_at = bf.pred_proj + static_cast<size_t>(row) * J + col;
      float pred;
      if (mma && s.label[row] >= 0) {
        pred = tile_sum<1>(red, 0) + w.pred_b[col];
        __stcg(pp_at, pred);
      } else {
        pred = __ldcg(pp_at);
      }
      float v = 0.0f;
      if (s.active[row] && col < w.enc_width) {
        const int frame = min(s.t[row], s.len[row] - 1);
        const T e = enc[(static_cast<size_t>(row) * prm.frames + frame) * w.enc_width + col];
        v = fmaxf(0.0f, to_f32(e) + w.enc_b[col] + pred);
      }
      hidden[static_cast<size_t>(row) * J + col] = from_f32<T>(v);
      if (mma) __syncthreads();
    }
  }

  // Column tiles ct, ..., ct + NACC - 1 of the logits for row tile r0 in one pass (the same input rows, NACC
  // weight tiles, from slot `slot` on): each row's best-token key raised with the tiles' first maximum over
  // their token columns, the duration logits stored.
  template <int NACC>
  __device__ void logit_tiles(int ct, int r0, int slot, unsigned long long* keys) {
    const int J = w.J, c0 = ct * kTile;
    const T* wt[NACC];
    int ldw;
    weight_tiles<NACC>(kPersistentMaxLayers + 1, ct, slot, static_cast<const T*>(w.out_w), J,
                       [&](int g) { return c0 + g * kTile; }, wt, ldw);
    const T* hidden = static_cast<const T*>(bf.hidden);
    stage(a, ld, 0, J, [&](int q) { return s.active[r0 + q] ? hidden + static_cast<size_t>(r0 + q) * J : nullptr; });
    finish_copies();
    tile_partials<T, NACC>(a, ld, wt, ldw, J, red);
    // Thread (r, cc) holds row r0 + r's logits of columns c0 + g * 16 + cc; a row's 16 threads are half a warp.
    const int r = threadIdx.x / kTile, cc = threadIdx.x % kTile, row = r0 + r;
    const bool live = s.active[row] != 0;
    float best = 0.0f;
    int best_i = -1;
#pragma unroll
    for (int g = 0; g < NACC; ++g) {
      const int col = c0 + g * kTile + cc;
      const float v = tile_sum<NACC>(red, g) + w.out_b[col];
      if (col <= d.blank) {
        if (beats(v, col, best, best_i)) {
          best = v;
          best_i = col;
        }
      } else if (live && col < d.n_out) {
        __stcg(bf.dur_logits + static_cast<size_t>(row) * kMaxDurations + (col - d.blank - 1), v);
      }
    }
    group_argmax(best, best_i, kTile);
    if (live && cc == 0 && best_i >= 0) atomicMax(keys + row, token_key(best, best_i));
    __syncthreads();  // the next pass reuses `red`
  }

  // The logits of every active row: shared roles take their items one tile at a time, dedicated roles the
  // block's column tiles in passes of up to four per row tile. `parity`: the step's half of best_key.
  __device__ void logits(int parity) {
    const int row_tiles = bf.rows / kTile;
    unsigned long long* keys = bf.best_key + static_cast<size_t>(parity) * bf.rows;
    const Items items = logit_items(row_tiles);
    auto pass = [&](int n, int ct, int r0) {
      if (!any_row(r0, [&](int q) { return s.active[q] != 0; })) return;
      const int slot = items.slot(ct);
      // Passes of 1, 2 or 4 tiles: nvcc 13.0 crashes compiling logit_tiles<3>.
      if (n == 4)
        logit_tiles<4>(ct, r0, slot, keys);
      else if (n == 2)
        logit_tiles<2>(ct, r0, slot, keys);
      else
        logit_tiles<1>(ct, r0, slot, keys);
    };
    if (!items.dedicated) {
      for (int item = items.first; item < items.last; ++item) pass(1, item / row_tiles, item % row_tiles * kTile);
      return;
    }
    const int ct_end = items.ct0 + (items.last - items.first) / row_tiles;
    for (int rt = 0; rt < row_tiles; ++rt) {
      for (int ct = items.ct0; ct < ct_end;) {
        const int n = ct_end - ct >= 4 ? 4 : ct_end - ct >= 2 ? 2 : 1;
        pass(n, ct, rt * kTile);
        ct += n;
      }
    }
  }

  // Every active row's decision from its best-token key and duration logits, applied to the row table. A group
  // of 256 / rows threads takes each row (16 at one row tile, 1 at 256 rows), so that the loads run in parallel
  // at any batch size; the group's first thread applies NeMo's rules. Block 0 records the tokens and resets the
  // other parity's keys for the next step (read by no one until then: a barrier or more lies between). Returns
  // whether any row emitted.
  __device__ bool decide(int parity) {
    const int group = kPersistentThreads / bf.rows;  // a power of two: rows is a power of two >= 16
    const int row = threadIdx.x / group, sub = threadIdx.x % group;
    const bool active = s.active[row] != 0;
    unsigned long long key = 0;
    float d_value = 0.0f;
    int d_idx = -1;
    if (active) {
      if (sub == 0) key = __ldcg(bf.best_key + static_cast<size_t>(parity) * bf.rows + row);
      // The duration: the first maximum, as the CPU decoder's strict comparison picks it.
      const float* dur = bf.dur_logits + static_cast<size_t>(row) * kMaxDurations;
      for (int j = sub; j < d.n_durations; j += group) {
        const float v = __ldcg(dur + j);
        if (beats(v, j, d_value, d_idx)) {
          d_value = v;
          d_idx = j;
        }
      }
    }
    group_argmax(d_value, d_idx, group);
    if (sub == 0) {
      int label = -1;
      if (active) {
        TdtRowState st{s.t[row], s.len[row], s.count[row], s.sym[row], s.last_ts[row], s.steps[row]};
        int32_t* out_row = blockIdx.x == 0 ? prm.out + static_cast<size_t>(row) * prm.out_cap * 3 : nullptr;
        label = apply_tdt_decision(d, key_token(key), d_idx, st, out_row, prm.out_cap);
        s.t[row] = st.t;
        s.count[row] = st.count;
        s.sym[row] = st.sym;
        s.last_ts[row] = st.last_ts;
        s.steps[row] = st.steps;
        s.active[row] = st.t < st.len;
      }
      s.label[row] = label;
      if (blockIdx.x == 0) __stcg(bf.best_key + static_cast<size_t>(parity ^ 1) * bf.rows + row, 0ull);
    }
    // A barrier first: __syncthreads_or's predicate is read before it waits, and another group may still be
    // deciding the row this thread looks at.
    __syncthreads();
    return __syncthreads_or(threadIdx.x < bf.rows && s.label[threadIdx.x] >= 0) != 0;
  }

  // Called after a grid barrier, so every decision is in the row table.
  __device__ bool any_active() { return __syncthreads_or(threadIdx.x < bf.rows && s.active[threadIdx.x]) != 0; }
};

template <typename T>
__global__ void __launch_bounds__(kPersistentThreads, 1)
    tdt_persistent_kernel(const __grid_constant__ TdtDims d, const __grid_constant__ PersistentWeights w,
                          const __grid_constant__ PersistentBuffers bf, const TdtCallParams* p,
                          const __grid_constant__ PersistentRoles roles) {
  extern __shared__ __align__(128) unsigned char smem[];
  cg::grid_group grid = cg::this_grid();
  const SmemLayout layout(w, sizeof(T));
  RowTable& s = *reinterpret_cast<RowTable*>(smem);
  const TdtCallParams prm = *p;
  Phase<T> ph{d,
              w,
              bf,
              prm,
              s,
              reinterpret_cast<T*>(smem + layout.a),
              reinterpret_cast<float*>(smem + layout.a),
              reinterpret_cast<T*>(smem + layout.w),
              layout.ld,
              roles,
              {-1, -1, -1, -1}};

  // Start: every row at frame 0; the first LSTM step is NeMo's SOS step (embed[blank] from zero state).
  for (int r = threadIdx.x; r < bf.rows; r += kPersistentThreads) {
    const int len = r < d.rows ? bf.len[r] : 0;
    s.t[r] = 0;
    s.len[r] = len;
    s.count[r] = 0;
    s.sym[r] = 0;
    s.last_ts[r] = -1;
    s.steps[r] = 0;
    s.active[r] = len > 0;
    s.label[r] = d.blank;
  }
  const size_t state = static_cast<size_t>(bf.rows) * w.H;
  for (size_t i = static_cast<size_t>(blockIdx.x) * kPersistentThreads + threadIdx.x; i < state;
       i += static_cast<size_t>(gridDim.x) * kPersistentThreads) {
    for (int l = 0; l < w.layers; ++l) {
      static_cast<T*>(bf.h[l][0])[i] = from_f32<T>(0.0f);
      __stcg(bf.c[l] + i, 0.0f);
    }
  }
  for (int i = static_cast<int>(blockIdx.x * kPersistentThreads + threadIdx.x); i < 2 * bf.rows;
       i += static_cast<int>(gridDim.x * kPersistentThreads))
    __stcg(bf.best_key + i, 0ull);
  // The developer's trace (PersistentBuffers::trace): stamps by thread 0 once the block's threads have met.
  uint64_t* trace = bf.trace == nullptr ? nullptr : bf.trace + static_cast<size_t>(blockIdx.x) * bf.trace_cap;
  int stamps = 0;
  auto stamp = [&](uint32_t tag) {
    if (trace == nullptr) return;
    __syncthreads();
    if (threadIdx.x == 0 && stamps + 1 < bf.trace_cap)
      trace[1 + stamps++] = (static_cast<uint64_t>(clock64()) << 8) | tag;
  };
  auto sync = [&](uint32_t tag) {
    stamp(tag);
    grid.sync();
    stamp(kTraceBarrier);
  };
  sync(kTraceStart);

  int lp = 0;  // the h buffers of the current state
  auto advance = [&](bool emitted) {
    if (emitted) {
      for (int l = 0; l < w.layers; ++l) {
        ph.lstm_layer(l, lp);
        sync(kTraceLstm0 + l);
      }
      lp ^= 1;
    }
    ph.pred_and_hidden(lp, emitted);
    sync(kTracePred);
  };
  advance(true);

  int iterations = 0;
  bool overflow = false;
  while (ph.any_active()) {
    if (iterations >= prm.max_steps) {
      overflow = true;
      break;
    }
    ph.logits(iterations & 1);
    sync(kTraceLogits);
    const bool emitted = ph.decide(iterations & 1);
    stamp(kTraceDecide);
    ++iterations;
    advance(emitted);
  }
  if (trace != nullptr && threadIdx.x == 0) trace[0] = static_cast<uint64_t>(stamps);

  if (blockIdx.x == 0) {
    for (int r = threadIdx.x; r < d.rows; r += kPersistentThreads) {
      bf.count[r] = s.count[r];
      bf.steps[r] = s.steps[r];
    }
    if (threadIdx.x == 0) *bf.ctrl = TdtControl{0u, iterations, 0, overflow ? 1 : 0};
  }
}

template <typename T>
const void* kernel_of() {
  return reinterpret_cast<const void*>(&tdt_persistent_kernel<T>);
}

const void* kernel_for(Dt dt) {
  const void* k = nullptr;
  dispatch_dt(dt, [&](auto tag) { k = kernel_of<decltype(tag)>(); });
  return k;
}

size_t elem_size(Dt dt) { return dt == Dt::kF32 ? 4 : 2; }

}  // namespace

size_t persistent_smem_bytes(Dt dt, PersistentWeights& w) {
  w.resident = 0;
  if (w.layers < 1 || w.layers > kPersistentMaxLayers) return 0;
  for (int v : {w.H, w.J, w.N})
    if (v <= 0 || v % kTile != 0) return 0;
  if (w.enc_width <= 0 || w.enc_width > w.J) return 0;
  int device = 0, limit = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const SmemLayout layout(w, elem_size(dt));
  if (layout.resident <= static_cast<size_t>(limit)) {
    w.resident = 1;
    return layout.resident;
  }
  return layout.streamed <= static_cast<size_t>(limit) ? layout.streamed : 0;
}

int persistent_blocks_per_sm(Dt dt, size_t smem_bytes) {
  const void* k = kernel_for(dt);
  if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)) !=
      cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, kPersistentThreads, smem_bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

cudaError_t launch_tdt_persistent(Dt dt, const TdtDims& dims, const PersistentWeights& w,
                                  const PersistentBuffers& buffers, const TdtCallParams* params, int grid,
                                  const PersistentRoles& roles, size_t smem_bytes, cudaStream_t stream) {
  TdtDims d = dims;
  PersistentWeights wc = w;
  PersistentBuffers bc = buffers;
  const TdtCallParams* pc = params;
  PersistentRoles rc = roles;
  void* args[] = {&d, &wc, &bc, &pc, &rc};
  const cudaError_t err = cudaLaunchCooperativeKernel(kernel_for(dt), dim3(static_cast<unsigned>(grid)),
                                                      dim3(kPersistentThreads), args, smem_bytes, stream);
  if (err != cudaSuccess) cudaGetLastError();
  return err;
}

}  // namespace steno::asr::cuda_tdt
