// Fused relative-position attention (include/steno/ops/attention.h), flash-attention style: one CTA per (query
// block, head, batch) streams the visible keys through shared memory in blocks of kBN and keeps an online
// softmax, so the [T, T] score matrix never exists and a window {left, right} costs O(T·w).
//
// Per key block [j0, j0 + BN) the CTA loads K, V and the pos rows the block's offsets i - j touch, then each
// warp, owning 16 query rows, works alone (no CTA barrier) on:
//   S  = q·Kᵀ                         16 x BN
//   BD = q·Posᵀ                       16 x (BN + 16): the warp's 16 rows see offsets spanning BN + 15 pos rows
//   s(i, j) = (S + u·k_j + BD[skew] + v·pos_r) / sqrt(dk),  r = R - (i - j)   (NeMo's rel_shift as an index)
//   online softmax over the visible j (row max m, sum l in f32), P in the storage type, O = O·alpha + P·V.
// The biases enter as the column terms u·k_j and v·pos_r (f32 dots per block) rather than as q + u, q + v:
// the same sum, without rounding q + u to f16/bf16 before the tensor-core product.
//
// f16/bf16 use tensor cores through nvcuda::wmma (16x16x16, f32 accumulate), with S, BD and the output
// accumulator O staged in shared memory because wmma's fragment layout is opaque (the online-softmax rescale
// needs O by row). f32 runs the same schedule on CUDA cores (exact f32, the correctness reference on the GPU).
// What a faster version must do: keep O, S and BD in registers with mma.sync (m16n8k16, known fragment
// layout), ldmatrix + cp.async double-buffered K/V/pos tiles, exp2 with a folded log2(e) scale, and skew BD
// with warp shuffles or a per-row shared-memory pass; none of that changes the maths here.
//
// Masking as the CPU kernel: keys j >= length or outside [i - left, i + right] get probability exactly 0 (NeMo
// gives them -10000, whose weight underflows to 0 when any visible score exceeds -9890); rows i >= length are 0.
#include <mma.h>

#include <cstdint>

#include "launch_common.cuh"
#include "attention_launch.h"

namespace steno::ops::cuda {

namespace {

// Tile shapes per storage type. Each warp owns 16 query rows, so a CTA has BM / 16 warps.
template <typename T> struct AttnTiles {  // f16 / bf16: tensor cores
  static constexpr int kBM = 64, kBN = 32;
  static constexpr int kPad = 8;  // row padding (elements) of q/k/v/pos tiles: wmma needs ld % 8 == 0
  static constexpr bool kTensorCores = true;
};
template <> struct AttnTiles<float> {  // CUDA cores
  static constexpr int kBM = 32, kBN = 32;
  static constexpr int kPad = 1;  // odd row stride: a warp reading one column of 32 rows hits 32 banks
  static constexpr bool kTensorCores = false;
};

constexpr int64_t round128(int64_t bytes) { return (bytes + 127) / 128 * 128; }

// Dynamic shared memory layout (byte offsets, each 128-byte aligned; wmma needs 32).
template <typename T, int DK> struct AttnSmem {
  static constexpr int kBM = AttnTiles<T>::kBM, kBN = AttnTiles<T>::kBN;
  static constexpr int kLdT = DK + AttnTiles<T>::kPad;  // q, k, v, pos tiles [rows][kLdT] of T
  static constexpr int kPosRows = kBM + kBN;            // offsets i - j of a block span kBM + kBN - 1 pos rows
  static constexpr int kBdCols = kBN + 16;              // one warp's 16 rows span kBN + 15 of them
  static constexpr int kLdS = kBN + 4, kLdBd = kBdCols + 4, kLdO = DK + 4;  // f32 tiles
  static constexpr int kLdP = kBN + (sizeof(T) == 4 ? 4 : 8);               // P [kBM][kLdP] of T

  static constexpr int64_t kOBytes = round128(int64_t{kBM} * kLdO * 4);
  static constexpr int64_t kQBytes = round128(int64_t{kBM} * kLdT * sizeof(T));
  // With tensor cores each warp keeps its q fragments in registers after the first load, so q shares O's space.
  static constexpr bool kQAliasesO = AttnTiles<T>::kTensorCores;
  static constexpr int64_t kO = 0;
  static constexpr int64_t kQ = kQAliasesO ? 0 : kOBytes;
  static constexpr int64_t kK = kQAliasesO ? kOBytes : kQ + kQBytes;
  static constexpr int64_t kV = kK + round128(int64_t{kBN} * kLdT * sizeof(T));
  static constexpr int64_t kPos = kV + round128(int64_t{kBN} * kLdT * sizeof(T));
  static constexpr int64_t kS = kPos + round128(int64_t{kPosRows} * kLdT * sizeof(T));
  static constexpr int64_t kBd = kS + round128(int64_t{kBM} * kLdS * 4);
  static constexpr int64_t kP = kBd + round128(int64_t{kBM} * kLdBd * 4);
  static constexpr int64_t kUk = kP + round128(int64_t{kBM} * kLdP * sizeof(T));  // u·k_j, [kBN] f32
  static constexpr int64_t kVp = kUk + round128(kBN * 4);                         // v·pos_r, [kPosRows] f32
  static constexpr int64_t kU = kVp + round128(kPosRows * 4);                     // u, v biases: [2][DK] f32
  static constexpr int64_t kBytes = kU + round128(2 * DK * 4);

  static_assert(kBM % 16 == 0 && kBN % 16 == 0 && DK % 16 == 0, "tiles are made of 16x16 wmma blocks");
  static_assert(!kQAliasesO || kQBytes <= kOBytes, "q must fit in O's space");
  static_assert(kLdT * sizeof(T) % 2 == 0 && kLdP * sizeof(T) % 2 == 0,
                "16 rows of a T tile must span a multiple of 32 bytes (wmma pointer alignment)");
  static_assert(kLdS % 4 == 0 && kLdBd % 4 == 0 && kLdO % 4 == 0, "wmma f32 leading dimensions are multiples of 4");
  static_assert(kBytes <= 227 * 1024, "exceeds the shared memory of one sm_90 CTA");
};

struct AttnParams {
  const void* q;
  const void* k;
  const void* v;
  const void* pos;
  const void* u;
  const void* vb;
  void* out;
  const int32_t* lengths;
  int64_t steps, width, r_max, left, right;  // width = H*dk, the row stride of q/k/v/pos/out
  int dk;
  float scale;
  bool vec;  // every row of q/k/v/pos starts 16-byte aligned and dk fills whole 16-byte chunks
};

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}


// dst[r][0, DK) = rows row0 + r of a head slice `g` (row stride ld) for r in [0, nrows); rows outside
// [row_lo, row_hi) and columns >= dk are zero, so padding never feeds NaN garbage into a product.
template <typename T, int DK, int LDS, int NT>
__device__ void load_rows(T* dst, const T* g, int64_t ld, int64_t row0, int64_t row_lo, int64_t row_hi, int nrows,
                          int dk, bool vec, int tid) {
  const T zero = from_f32<T>(0.0f);
  if (vec) {
    constexpr int kVec = 16 / sizeof(T);  // dk % kVec == 0 here, so a chunk is all in or all out
    constexpr int kChunks = DK / kVec;
    for (int e = tid; e < nrows * kChunks; e += NT) {
      const int r = e / kChunks, c = (e % kChunks) * kVec;
      const int64_t gr = row0 + r;
      const bool in = c < dk && gr >= row_lo && gr < row_hi;
      if constexpr (sizeof(T) == 4) {  // f32 tiles have an odd row stride: store lane by lane
        const float4 f = in ? *reinterpret_cast<const float4*>(g + gr * ld + c) : make_float4(0.f, 0.f, 0.f, 0.f);
        float* d = dst + r * LDS + c;
        d[0] = f.x;
        d[1] = f.y;
        d[2] = f.z;
        d[3] = f.w;
      } else {  // 16-bit tiles: rows are 16-byte aligned (LDS % 8 == 0); all-zero bits are +0
        static_assert(LDS * sizeof(T) % 16 == 0, "16-bit tile rows must stay 16-byte aligned");
        *reinterpret_cast<uint4*>(dst + r * LDS + c) =
            in ? *reinterpret_cast<const uint4*>(g + gr * ld + c) : make_uint4(0u, 0u, 0u, 0u);
      }
    }
    return;
  }
  for (int e = tid; e < nrows * DK; e += NT) {
    const int r = e / DK, c = e % DK;
    const int64_t gr = row0 + r;
    dst[r * LDS + c] = (c < dk && gr >= row_lo && gr < row_hi) ? g[gr * ld + c] : zero;
  }
}

// ---- warp-level products on CUDA cores (f32) ----

// C[16][N] = A[16][DK] · B[N][DK]ᵀ. Lane n keeps a column of 16 accumulators; A is read by broadcast.
template <int DK, int N>
__device__ void warp_abt_f32(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int lane) {
  for (int n = lane; n < N; n += 32) {
    float acc[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) acc[r] = 0.0f;
    const float* brow = b + n * ldb;
    for (int kk = 0; kk < DK; ++kk) {
      const float bv = brow[kk];
#pragma unroll
      for (int r = 0; r < 16; ++r) acc[r] = fmaf(a[r * lda + kk], bv, acc[r]);
    }
#pragma unroll
    for (int r = 0; r < 16; ++r) c[r * ldc + n] = acc[r];
  }
}

// C[16][DK] += A[16][K] · B[K][DK].
template <int DK, int K>
__device__ void warp_ab_acc_f32(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int lane) {
  for (int n = lane; n < DK; n += 32) {
    float acc[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) acc[r] = c[r * ldc + n];
    for (int kk = 0; kk < K; ++kk) {
      const float bv = b[kk * ldb + n];
#pragma unroll
      for (int r = 0; r < 16; ++r) acc[r] = fmaf(a[r * lda + kk], bv, acc[r]);
    }
#pragma unroll
    for (int r = 0; r < 16; ++r) c[r * ldc + n] = acc[r];
  }
}

// ---- warp-level products on tensor cores (f16 / bf16, f32 accumulate) ----

namespace wmma = nvcuda::wmma;
template <typename T> using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <typename T> using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major>;
template <typename T> using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// C[16][N] = A · B[N][DK]ᵀ with A's 16 x DK already in fragments. B row-major [N][ldb] is Bᵀ column-major.
template <typename T, int DK, int N>
__device__ void warp_abt_tc(const FragA<T> (&a)[DK / 16], const T* b, int ldb, float* c, int ldc) {
#pragma unroll
  for (int nt = 0; nt < N / 16; ++nt) {
    FragC acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kt = 0; kt < DK / 16; ++kt) {
      FragBCol<T> bf;
      wmma::load_matrix_sync(bf, b + nt * 16 * ldb + kt * 16, ldb);
      wmma::mma_sync(acc, a[kt], bf, acc);
    }
    wmma::store_matrix_sync(c + nt * 16, acc, ldc, wmma::mem_row_major);
  }
}

// C[16][DK] += A[16][K] · B[K][DK], C in shared memory (f32).
template <typename T, int DK, int K>
__device__ void warp_ab_acc_tc(const T* a, int lda, const T* b, int ldb, float* c, int ldc) {
  FragA<T> af[K / 16];
#pragma unroll
  for (int kt = 0; kt < K / 16; ++kt) wmma::load_matrix_sync(af[kt], a + kt * 16, lda);
#pragma unroll
  for (int ct = 0; ct < DK / 16; ++ct) {
    FragC acc;
    wmma::load_matrix_sync(acc, c + ct * 16, ldc, wmma::mem_row_major);
#pragma unroll
    for (int kt = 0; kt < K / 16; ++kt) {
      FragBRow<T> bf;
      wmma::load_matrix_sync(bf, b + kt * 16 * ldb + ct * 16, ldb);
      wmma::mma_sync(acc, af[kt], bf, acc);
    }
    wmma::store_matrix_sync(c + ct * 16, acc, ldc, wmma::mem_row_major);
  }
}

// Dummy fragments for the f32 instantiation, which never touches them.
template <typename T, int DK, bool kTc> struct QFrags {
  FragA<T> f[DK / 16];
};
template <typename T, int DK> struct QFrags<T, DK, false> {};

// Grid (ceil(T / BM), H, B); BM / 16 warps.
template <typename T, int DK>
__global__ void __launch_bounds__(AttnTiles<T>::kBM * 2)
    rel_pos_attention_kernel(AttnParams p) {
  using L = AttnSmem<T, DK>;
  constexpr int BM = L::kBM, BN = L::kBN, NT = BM * 2;  // BM / 16 warps of 32 threads
  constexpr bool kTc = AttnTiles<T>::kTensorCores;
  extern __shared__ __align__(128) unsigned char smem[];
  float* o_s = reinterpret_cast<float*>(smem + L::kO);
  T* q_s = reinterpret_cast<T*>(smem + L::kQ);
  T* k_s = reinterpret_cast<T*>(smem + L::kK);
  T* v_s = reinterpret_cast<T*>(smem + L::kV);
  T* pos_s = reinterpret_cast<T*>(smem + L::kPos);
  float* s_s = reinterpret_cast<float*>(smem + L::kS);
  float* bd_s = reinterpret_cast<float*>(smem + L::kBd);
  T* p_s = reinterpret_cast<T*>(smem + L::kP);
  float* uk_s = reinterpret_cast<float*>(smem + L::kUk);
  float* vp_s = reinterpret_cast<float*>(smem + L::kVp);
  float* u_s = reinterpret_cast<float*>(smem + L::kU);
  float* vb_s = u_s + DK;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int b = blockIdx.z, h = blockIdx.y;
  const int64_t steps = p.steps, ld = p.width, left = p.left, right = p.right;
  const int dk = p.dk;
  const int64_t i0 = int64_t{blockIdx.x} * BM;
  const int64_t len = p.lengths[b];
  const int64_t head = int64_t{h} * dk;
  const int64_t batch_off = int64_t{b} * steps * ld;
  T* out = static_cast<T*>(p.out) + batch_off + head;
  const int nrows = static_cast<int>(min(int64_t{BM}, steps - i0));  // rows of this block inside T

  if (i0 >= len) {  // the whole block is padding
    const T zero = from_f32<T>(0.0f);
    for (int e = tid; e < nrows * dk; e += NT) out[(i0 + e / dk) * ld + e % dk] = zero;
    return;
  }
  const int64_t i1 = min(i0 + BM, len);  // valid query rows [i0, i1)
  // Keys any row of the block can see: [jlo, jhi).
  const int64_t jlo = left < 0 ? 0 : max(int64_t{0}, i0 - left);
  const int64_t jhi = right < 0 ? len : min(len, i1 + right);

  load_rows<T, DK, L::kLdT, NT>(q_s, static_cast<const T*>(p.q) + batch_off + head, ld, i0, i0, i1, BM, dk, p.vec,
                                tid);
  for (int c = tid; c < DK; c += NT) {
    u_s[c] = c < dk ? to_f32(static_cast<const T*>(p.u)[head + c]) : 0.0f;
    vb_s[c] = c < dk ? to_f32(static_cast<const T*>(p.vb)[head + c]) : 0.0f;
  }
  __syncthreads();

  const int wr = warp * 16;  // the warp's first row within the block
  QFrags<T, DK, kTc> qf;
  if constexpr (kTc) {
#pragma unroll
    for (int kt = 0; kt < DK / 16; ++kt) wmma::load_matrix_sync(qf.f[kt], q_s + wr * L::kLdT + kt * 16, L::kLdT);
    __syncthreads();  // q_s shares O's space: every warp has its fragments before O is cleared
  }
  for (int e = tid; e < BM * L::kLdO; e += NT) o_s[e] = 0.0f;

  // The warp's rows [iw0, iw1) and the keys they can see, [wjlo, wjhi).
  const int64_t iw0 = i0 + wr, iw1 = min(iw0 + 16, i1);
  const int64_t wjlo = left < 0 ? 0 : max(int64_t{0}, iw0 - left);
  const int64_t wjhi = right < 0 ? len : min(len, iw1 + right);
  float m_row[16], l_row[16];  // running max and sum of the warp's rows (identical in every lane)
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    m_row[r] = -INFINITY;
    l_row[r] = 0.0f;
  }

  for (int64_t j0 = jlo; j0 < jhi; j0 += BN) {
    // Tile column c of pos_s is pos row R - (i - j) for block row i - i0 = BM - 1 - c + (j - j0).
    const int64_t rbase = p.r_max - (i0 + BM - 1) + j0;
    __syncthreads();  // the previous block's tiles are no longer read
    const T* kg = static_cast<const T*>(p.k) + batch_off + head;
    const T* vg = static_cast<const T*>(p.v) + batch_off + head;
    load_rows<T, DK, L::kLdT, NT>(k_s, kg, ld, j0, j0, jhi, BN, dk, p.vec, tid);
    load_rows<T, DK, L::kLdT, NT>(v_s, vg, ld, j0, j0, jhi, BN, dk, p.vec, tid);
    load_rows<T, DK, L::kLdT, NT>(pos_s, static_cast<const T*>(p.pos) + head, ld, rbase, 0, 2 * p.r_max + 1,
                                  L::kPosRows, dk, p.vec, tid);
    __syncthreads();
    for (int r = tid; r < BN + L::kPosRows; r += NT) {  // bias terms u·k_j and v·pos_r in f32
      const T* row = r < BN ? k_s + r * L::kLdT : pos_s + (r - BN) * L::kLdT;
      const float* bias = r < BN ? u_s : vb_s;
      float acc = 0.0f;
      for (int c = 0; c < DK; ++c) acc = fmaf(bias[c], to_f32(row[c]), acc);
      if (r < BN)
        uk_s[r] = acc;
      else
        vp_s[r - BN] = acc;
    }
    __syncthreads();
    // From here to the next barrier each warp touches only its own rows of S, BD, P and O.
    if (iw0 >= iw1 || j0 >= wjhi || j0 + BN <= wjlo) continue;  // nothing visible to this warp's rows

    float* s_w = s_s + wr * L::kLdS;
    float* bd_w = bd_s + wr * L::kLdBd;
    T* p_w = p_s + wr * L::kLdP;
    float* o_w = o_s + wr * L::kLdO;
    const T* pos_w = pos_s + (BM - 16 - wr) * L::kLdT;  // the warp's first BD column
    if constexpr (kTc) {
      warp_abt_tc<T, DK, BN>(qf.f, k_s, L::kLdT, s_w, L::kLdS);
      warp_abt_tc<T, DK, L::kBdCols>(qf.f, pos_w, L::kLdT, bd_w, L::kLdBd);
    } else {
      const float* q_w = q_s + wr * L::kLdT;
      warp_abt_f32<DK, BN>(q_w, L::kLdT, k_s, L::kLdT, s_w, L::kLdS, lane);
      warp_abt_f32<DK, L::kBdCols>(q_w, L::kLdT, pos_w, L::kLdT, bd_w, L::kLdBd, lane);
    }
    __syncwarp();

    constexpr int kCols = (BN + 31) / 32;  // key columns per lane
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      const int64_t i = iw0 + r;
      // Keys visible from row i: [a, e) (empty for rows at or past the length).
      const int64_t a = left < 0 ? 0 : max(int64_t{0}, i - left);
      const int64_t e = i >= i1 ? 0 : right < 0 ? len : min(len, i + right + 1);
      float sv[kCols];
      float tile_max = -INFINITY;
#pragma unroll
      for (int t = 0; t < kCols; ++t) {
        const int jj = lane + 32 * t;
        const int64_t j = j0 + jj;
        sv[t] = -INFINITY;
        if (jj < BN && j >= a && j < e) {
          const int c = BM - 1 - (wr + r) + jj;  // pos_s row of offset i - j
          sv[t] = (s_w[r * L::kLdS + jj] + uk_s[jj] + bd_w[r * L::kLdBd + 15 - r + jj] + vp_s[c]) * p.scale;
        }
        tile_max = fmaxf(tile_max, sv[t]);
      }
      const float m_new = fmaxf(m_row[r], warp_max(tile_max));
      // Until a row has seen a visible key, m_new is -inf: keep O (zero) and l as they are.
      const float alpha = m_new == -INFINITY ? 1.0f : expf(m_row[r] - m_new);
      float sum = 0.0f;
#pragma unroll
      for (int t = 0; t < kCols; ++t) {
        const int jj = lane + 32 * t;
        const float pv = sv[t] == -INFINITY ? 0.0f : expf(sv[t] - m_new);
        sum += pv;
        if (jj < BN) p_w[r * L::kLdP + jj] = from_f32<T>(pv);
      }
      l_row[r] = l_row[r] * alpha + warp_sum(sum);
      m_row[r] = m_new;
      for (int c = lane; c < DK; c += 32) o_w[r * L::kLdO + c] *= alpha;
    }
    __syncwarp();
    if constexpr (kTc)
      warp_ab_acc_tc<T, DK, BN>(p_w, L::kLdP, v_s, L::kLdT, o_w, L::kLdO);
    else
      warp_ab_acc_f32<DK, BN>(p_w, L::kLdP, v_s, L::kLdT, o_w, L::kLdO, lane);
  }
  __syncwarp();

  // Every valid row saw at least its own key (j = i), so l > 0 there; rows at or past the length are zero.
  const float* o_w = o_s + wr * L::kLdO;
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    const int64_t i = iw0 + r;
    if (wr + r >= nrows) break;
    const bool valid = i < i1;
    const float inv = valid ? 1.0f / l_row[r] : 0.0f;
    for (int c = lane; c < dk; c += 32) out[i * ld + c] = from_f32<T>(valid ? o_w[r * L::kLdO + c] * inv : 0.0f);
  }
}

template <typename T, int DK>
void launch_attention(const AttnParams& p, int64_t batch, int64_t heads, cudaStream_t stream) {
  using L = AttnSmem<T, DK>;
  constexpr int BM = L::kBM;
  auto kernel = rel_pos_attention_kernel<T, DK>;
  // Over 48 KiB of dynamic shared memory needs an explicit opt-in; a failure surfaces in check_launch.
  (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L::kBytes));
  const dim3 grid(static_cast<unsigned>((p.steps + BM - 1) / BM), static_cast<unsigned>(heads),
                  static_cast<unsigned>(batch));
  kernel<<<grid, BM * 2, L::kBytes, stream>>>(p);
}


}  // namespace

void launch_rel_pos_attention(Dt dt, const void* q, const void* k, const void* v, const void* pos,
                              const void* pos_bias_u, const void* pos_bias_v, void* out, const int32_t* lengths,
                              int64_t batch, int64_t steps, int64_t heads, int64_t dk, int64_t r_max, int64_t left,
                              int64_t right, float scale, cudaStream_t stream) {
  AttnParams p{q, k, v, pos, pos_bias_u, pos_bias_v, out, lengths, steps, heads * dk, r_max, left, right,
               static_cast<int>(dk), scale, false};
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    const int64_t elem = sizeof(T);
    p.vec = (dk * elem) % 16 == 0 && (p.width * elem) % 16 == 0 && aligned16(q) && aligned16(k) && aligned16(v) &&
            aligned16(pos);
    if (dk <= 16)
      launch_attention<T, 16>(p, batch, heads, stream);
    else if (dk <= 32)
      launch_attention<T, 32>(p, batch, heads, stream);
    else if (dk <= 64)
      launch_attention<T, 64>(p, batch, heads, stream);
    else
      launch_attention<T, 128>(p, batch, heads, stream);
  });
}

}  // namespace steno::ops::cuda
