// Shared-memory tiles of the flash-attention kernels (flash_attention.cu): rows of a head's columns copied in,
// zero-padded, with a row stride that keeps ldmatrix's loads free of bank conflicts.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "launch_common.cuh"

namespace steno::ops::cuda::flash {

// Eight warps of 16 query rows: a block of 128 queries reads each key tile (and the relative-position rows) once
// for twice the queries of four warps, and on its own fills an SM (one block of the relative-position kernel per
// SM: its double-buffered tiles take ~218 KB of shared memory at heads of 128).
constexpr int kWarps = 8;          // 16 query rows each
constexpr int kRows = 16 * kWarps; // queries per block
constexpr int kKeys = 64;          // keys per tile
constexpr int kThreads = 32 * kWarps;

// A tile's row stride in elements: DP (the head's columns rounded up to 16) plus 8, so consecutive rows start 16
// bytes apart in the banks (a stride of exactly 64 or 128 bytes puts every row of an ldmatrix on the same banks),
// and every row starts on a 16-byte boundary, as ldmatrix requires.
template <int DP>
constexpr int tile_ld() { return DP + 8; }

// One 16-byte copy from global to shared memory that does not hold up the thread (cp.async, sm_80 and newer);
// with valid false it writes 16 zero bytes and reads nothing. wait_async_copies() waits for this thread's.
__device__ __forceinline__ void copy_async_16(void* dst, const void* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 16 : 0));
#endif
}
// The same for 4 bytes (an f32 bias term); through L1 (.ca), as the PTX allows for copies under 16 bytes.
__device__ __forceinline__ void copy_async_4(void* dst, const void* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 4 : 0));
#endif
}
__device__ __forceinline__ void wait_async_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::);
#endif
}

// Copies kCount rows from row r0 of x (rows of `width` elements; only rows in [0, valid) exist) into tile,
// columns [col0, col0 + dk) to [0, dk), zeros elsewhere in [0, DP); row r0 + r lands in the tile's row slot(r)
// (r itself, or a ring's slot). With vec (dk a multiple of 8, x and col0 16-byte aligned) each thread queues its
// 16-byte asynchronous copies, all of a tile's in flight at once (a load per iteration waited for before the next
// made the kernels latency-bound); the caller then calls wait_async_copies() before its __syncthreads(). The
// copies a thread makes are fixed by the compile-time sizes (a column and every step-th row) and their indices are
// 32-bit: with a runtime count and a division per copy, the key loop's copies took a fifth of the kernel's time.
// Otherwise element by element.
template <typename T, int DP, int kCount, typename Slot>
__device__ __forceinline__ void load_rows_to(T* __restrict__ tile, Slot slot, const T* __restrict__ x, int r0,
                                             int valid, int64_t width, int col0, int dk, bool vec) {
  constexpr int ld = tile_ld<DP>();
  if (vec) {
    constexpr int per = Pack<T>::kSize, packs = DP / per, step = kThreads / packs;
    static_assert(kThreads % packs == 0, "a thread keeps one column of the tile");
    const int r = threadIdx.x / packs, c = threadIdx.x % packs * per;
#pragma unroll
    for (int j = 0; j < (kCount + step - 1) / step; ++j) {
      const int rr = r + j * step;
      if (kCount % step != 0 && rr >= kCount) break;
      const int row = r0 + rr;
      const bool ok = row >= 0 && row < valid && c < dk;
      copy_async_16(tile + slot(rr) * ld + c, ok ? x + row * width + col0 + c : x, ok);
    }
    return;
  }
  for (int i = threadIdx.x; i < kCount * DP; i += kThreads) {
    const int r = i / DP, c = i % DP, row = r0 + r;
    tile[slot(r) * ld + c] = (row >= 0 && row < valid && c < dk) ? x[row * width + col0 + c] : from_f32<T>(0.0f);
  }
}

// load_rows_to into rows 0 .. kCount - 1.
template <typename T, int DP, int kCount>
__device__ __forceinline__ void load_rows(T* __restrict__ tile, const T* __restrict__ x, int r0, int valid,
                                          int64_t width, int col0, int dk, bool vec) {
  load_rows_to<T, DP, kCount>(tile, [](int r) { return r; }, x, r0, valid, width, col0, dk, vec);
}

// Whether load_rows may take 16 bytes at a time from every row of these tensors' heads.
template <typename T>
inline bool vector_rows(int64_t dk, std::initializer_list<const void*> bases) {
  if (dk % Pack<T>::kSize != 0) return false;
  for (const void* p : bases)
    if (!aligned16(p)) return false;
  return true;
}

}  // namespace steno::ops::cuda::flash
