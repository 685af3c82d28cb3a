// FP8 (E4M3) linear layers for GPUs with FP8 tensor cores (compute capability 8.9 and later: Ada, Hopper). Both
// operands of a product are row-scaled: each row of the activations (a token) and each row of a weight (an output
// channel) is divided by its own largest magnitude over 448, E4M3's largest finite value, so every row uses the
// format's whole range whatever its neighbours hold, and the product is rescaled by the two scales in the GEMM's
// epilogue (cuBLASLt's outer-vector scaling), with f32 accumulation and the output in f16 or bf16.
// Per-row scales are computed as the row is quantized: no calibration, and a batch's transcript of a clip does not
// depend on the other clips in the batch (a per-tensor scale would).
#pragma once

#include <cstdint>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

// E4M3's largest finite magnitude: a row's largest element is quantized to it.
inline constexpr float kE4M3Max = 448.0f;

// A matrix in FP8 with one scale per row: row i stands for scales[i] * e4m3(values[i, :]).
// values: u8 [rows, cols] (E4M3 bit patterns, cols a multiple of 16); scales: f32 [rows]. A row of zeros has
// scale 0 and zero values.
struct Fp8Rows {
  Tensor values, scales;

  bool defined() const { return values.defined(); }
  int64_t rows() const { return values.dim(0); }
  int64_t cols() const { return values.dim(1); }
};

// Whether ctx runs FP8 products: a CUDA device of compute capability 8.9 or later.
bool fp8_supported(const Context& ctx);

// Space on ctx (its scratch memory) for `rows` rows of `cols` FP8 values and their scales.
Fp8Rows fp8_scratch(Context& ctx, int64_t rows, int64_t cols);

// out = the rows of x ([..., K], f16 or bf16, contiguous) in FP8; out has x.numel() / K rows of K.
void quantize_rows(Context& ctx, const Tensor& x, Fp8Rows& out);

// out = the rows of silu(x) in FP8: a feed-forward's hidden layer read once, its SiLU never stored in 16 bits.
void silu_quantize_rows(Context& ctx, const Tensor& x, Fp8Rows& out);

// ops::add_layer_norm with the normalised rows written in FP8 in the same pass: x += alpha * h (h undefined: no
// add, a plain layer norm of x), out = the rows of layer_norm(x) in FP8. The norm's output is never stored in
// 16 bits: in an FP8 encoder it feeds linear layers only.
void add_layer_norm_fp8(Context& ctx, Tensor& x, const Tensor& h, float alpha, const Tensor& gamma,
                        const Tensor& beta, float eps, Fp8Rows& out);

// The weight w [N, K] (any float dtype, any device) as FP8 rows on ctx's device in memory from `alloc` (the
// weights' allocator): made once when a model is placed. Waits for the upload.
Fp8Rows quantize_weight(Context& ctx, const Tensor& w, Allocator& alloc);

// y[..., N] = x · wᵀ + bias with x [M, K] and w [N, K] in FP8 rows; bias [N] (or undefined) and y ([..., N] with
// M rows) in one dtype, f16 or bf16. y must not alias the operands.
void linear_fp8(Context& ctx, const Fp8Rows& x, const Fp8Rows& w, const Tensor& bias, Tensor& y);

}  // namespace steno::ops
