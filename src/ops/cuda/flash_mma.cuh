// The tensor-core instructions of the flash-attention kernels (flash_attention.cu), with the fragment layouts
// PTX defines for mma.m16n8k16 (f16/bf16 inputs, f32 accumulators), so that scores, probabilities and outputs
// stay in registers instead of going through shared memory between the products (as WMMA's opaque fragments
// required). For lane = 4g + t (g = lane / 4, t = lane % 4):
//   A (16 x 16, row-major) a[0]: row g,   columns 2t, 2t+1     a[1]: row g+8, columns 2t, 2t+1
//                          a[2]: row g,   columns 2t+8, 2t+9   a[3]: row g+8, columns 2t+8, 2t+9
//   B (16 x 8)             b[0]: rows 2t, 2t+1 of column g     b[1]: rows 2t+8, 2t+9 of column g
//   C (16 x 8, f32)        c[0], c[1]: row g, columns 2t, 2t+1; c[2], c[3]: row g+8, the same columns
// Each 32-bit register holds two 16-bit values, the lower-numbered column (or row) in the low half.
#pragma once

#include <cstdint>
#include <cstring>

#include "launch_common.cuh"

namespace steno::ops::cuda::flash {

template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// A shared-memory address as the 32-bit offset the shared-space instructions take. Tiles' addresses are kept in
// this form so that an ldmatrix's address is a base register plus a constant, not 64-bit generic arithmetic.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8 x 8 matrices of 16-bit values from shared memory; lanes 8i .. 8i+7 give the row addresses of matrix i.
// Lane 4g + t receives row g, columns 2t and 2t+1 of each (with trans: rows 2t and 2t+1 of column g).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) { ldmatrix_x4(r, smem_u32(row)); }

// Two values rounded to T and packed (lo in the low half); `rounded` gets them back as f32.
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi, float& lo_rounded, float& hi_rounded) {
  const T a = from_f32<T>(lo), b = from_f32<T>(hi);
  lo_rounded = to_f32(a);
  hi_rounded = to_f32(b);
  uint16_t ua, ub;
  memcpy(&ua, &a, 2);
  memcpy(&ub, &b, 2);
  return static_cast<uint32_t>(ua) | (static_cast<uint32_t>(ub) << 16);
}

}  // namespace steno::ops::cuda::flash
