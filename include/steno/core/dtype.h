// Element types known at run time. Compute is fp32 on the CPU; fp16/bf16 are storage formats converted at load
// (and compute formats on CUDA later).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace steno {

enum class DType : uint8_t { kF32, kF16, kBF16, kI32, kI64, kU8 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", "f16", ...
// Parses steno names ("f32", "fp16", "bf16", ...) and safetensors names ("F32", "F16", "BF16", "I64", ...).
// Throws kInvalidArgument for anything else.
DType parse_dtype(std::string_view name);

// IEEE binary16 and bfloat16 <-> fp32, round-to-nearest-even, NaN and infinity preserved.
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t b);
uint16_t f32_to_bf16(float f);
// n binary16 or bfloat16 values to fp32, as the functions above give them, at memory speed (F16C where the CPU has
// it): a model's 16-bit weights widened at every load, which one value at a time took most of the load.
void widen_to_f32(const uint16_t* src, DType from, float* dst, int64_t n);

template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kF32; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kI32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kI64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kU8; }

}  // namespace steno
