// CUDA kernels behind the ops in include/steno/ops/ (built only with STENO_HAVE_CUDA), as host C++: each group's
// <group>_cuda.cc implements these with cuBLASLt or with the raw-pointer launchers of its <group>.cu (launch.h
// says why the two are split). Private to steno_ops and its tests. The entry points in src/ops/<group>.cc have
// checked shapes, devices and that each tensor is f32, f16 or bf16; each kernel here also checks that an op's
// float tensors share one dtype (detail::check_same_dtype) and computes in that dtype with f32 accumulation.
// Everything is queued on ctx.stream(): no kernel synchronizes the host. Host-side lengths are uploaded from
// pageable memory (upload_lengths), except while a LengthsGraph captures (lengths_graph.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "steno/core/cuda.h"
#include "steno/core/tensor.h"
#include "steno/ops/attention.h"
#include "steno/ops/conv.h"
#include "steno/ops/context.h"
#include "steno/ops/fp8.h"

namespace steno::ops::cuda {

// ---- gemm_cuda.cc (cuBLASLt) ----
// f32 only (raw pointers), as ops::gemm_raw.
void gemm_raw(Context& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// Row-major 2-D tensors of one dtype, f32 accumulation (f32: TF32 off, so results match the CPU closely).
void gemm(Context& ctx, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c, float alpha,
          float beta);
// y = x·wᵀ + bias, the bias added in the GEMM's epilogue.
void linear(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y);
// y = x·wᵀ + bias on FP8 rows (outer-vector scales), y and bias f16 or bf16.
void linear_fp8(Context& ctx, const Fp8Rows& x, const Fp8Rows& w, const Tensor& bias, Tensor& y);

// ---- fp8_cuda.cc + fp8.cu ----
bool fp8_supported(const Context& ctx);
// out = x's rows (after SiLU when silu) in FP8; x f16, bf16 or f32, contiguous.
void quantize_rows(Context& ctx, const Tensor& x, bool silu, Fp8Rows& out);
void add_layer_norm_fp8(Context& ctx, Tensor& x, const Tensor& h, float alpha, const Tensor& gamma,
                        const Tensor& beta, float eps, Fp8Rows& out);

// ---- conv_cuda.cc + conv.cu ----
void conv2d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y, int stride_h,
            int stride_w, int pad_h, int pad_w, int groups);
void depthwise_conv1d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                      int pad_left, int pad_right);
// subsampling_stem in one kernel (subsampling_stem.cu) for x no wider than its tiles take.
bool subsampling_stem_fits(const Tensor& x);
void subsampling_stem(Context& ctx, const Tensor& x, const Tensor& w0, const Tensor& b0, const Tensor& w_dw,
                      const Tensor& b_dw, const StemFrames* frames, Tensor& y);

// ---- norm_cuda.cc + norm.cu ----
void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y);
void batch_norm(Context& ctx, const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                const Tensor& beta, float eps, Tensor& y);

// ---- fused_cuda.cc + fused.cu ----
// False when $STENO_FUSED_OPS=0: the fused ops and layer_norm then run the plain kernels.
bool fused_ops_enabled();
void add_layer_norm(Context& ctx, Tensor& x, const Tensor& h, float alpha, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor& y);
void gated_depthwise_silu(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, int pad_left,
                          const std::vector<int64_t>& lengths, Tensor& y);

// ---- activation_cuda.cc + activation.cu ----
void relu(Context& ctx, const Tensor& x, Tensor& y);
void silu(Context& ctx, const Tensor& x, Tensor& y);
void sigmoid(Context& ctx, const Tensor& x, Tensor& y);
void glu(Context& ctx, const Tensor& x, Tensor& y);
void softmax(Context& ctx, const Tensor& x, Tensor& y);

// ---- elementwise_cuda.cc + elementwise.cu ----
void add(Context& ctx, const Tensor& a, const Tensor& b, float alpha, Tensor& y);
void scale(Context& ctx, Tensor& x, float s);
void zero_padded_frames(Context& ctx, Tensor& x, int time_axis, const std::vector<int64_t>& lengths);

// ---- attention_cuda.cc + attention.cu ----
void self_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                    const std::vector<int64_t>& lengths, Tensor& out);
void rel_pos_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                       const Tensor& pos_bias_u, const Tensor& pos_bias_v, const std::vector<int64_t>& lengths,
                       AttentionWindow window, Tensor& out);

// The f32 score scratch (bytes) one call of attention's GEMM path may use (attention_cuda.cc; default 1 GiB);
// longer inputs take the fused kernel; $STENO_ATTENTION_SCORE_BUDGET_MB sets the default. Tests set it: 0 sends full attention to the fused kernel too, one batch
// item's worth makes the GEMM path work in chunks. A negative value restores the default.
int64_t attention_score_budget();
void set_attention_score_budget(int64_t bytes);
// Which full attentions in f16/bf16 take the flash kernels (flash_attention.cu) where they apply: 0 none, 1 plain
// self-attention only, 2 relative-position attention too (the default), each when the call has blocks enough to
// fill the device (attention_cuda.cc, flash_takes), 3 both always (tests). $STENO_FLASH_ATTENTION=0|1|all sets
// the default (side-by-side comparisons); tests set the level to cover every path; a negative level restores the
// default.
int flash_attention_level();
void set_flash_attention_level(int level);

// ---- fault_cuda.cc + fault.cu (tests of supervision only) ----
void trap_device(Context& ctx);

// ---- lstm_cuda.cc + lstm.cu ----
void lstm_cell(Context& ctx, const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
               const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, Tensor& h_out, Tensor& c_out);
void lstm_layer(Context& ctx, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh, Tensor& h, Tensor& c, Tensor& y);

// ---- copy_cuda.cc + copy.cu ----
// Device-side parts of include/steno/ops/copy.h (the entry points handle host<->device byte copies).
void cast(Context& ctx, const Tensor& src, Tensor& dst);
void merge_channels(Context& ctx, const Tensor& x, Tensor& y);
// ops::copy_frames on raw bytes: `rows` rows, each the first `kept` bytes copied and the rest of dst's zeroed.
void copy_frames(Context& ctx, const void* src, int64_t src_row, void* dst, int64_t dst_row, int64_t kept,
                 int64_t rows);

}  // namespace steno::ops::cuda

namespace steno::ops::cuda {
// The launch.h element type of a validated tensor (f32, f16 or bf16).
enum class Dt : uint8_t;
Dt dt_of(const Tensor& t);
// gemm_cuda.cc: c = op(a)·op(b) + beta * c on raw row-major matrices of dtype dt (f32 accumulation), for ops
// that run GEMMs over parts of their tensors (conv2d's pointwise convs, one image at a time).
void gemm_dt(Context& ctx, Dt dt, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a,
             int64_t lda, const void* b, int64_t ldb, float beta, void* c, int64_t ldc);
// gemm_cuda.cc: `batch` products c_i = op(a_i)·op(b_i), operand X of product i at X.p + i * X.stride elements
// (row-major, leading dimension X.ld), f32 accumulation; c in f32 when c_f32, else in dt.
struct BatchedOperand {
  const void* p;
  int64_t ld, stride;
};
struct BatchedOutput {
  void* p;
  int64_t ld, stride;
};
void gemm_batched_dt(Context& ctx, Dt dt, bool c_f32, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     const BatchedOperand& a, const BatchedOperand& b, const BatchedOutput& c, int32_t batch);
// The stream a CUDA context queues on, as the launchers take it.
inline cudaStream_t stream_of(const Context& ctx) { return static_cast<cudaStream_t>(ctx.stream().handle()); }
// Lengths as int32 on the device, in ctx's stream order (from pageable memory: the upload is staged before the
// call returns, so the host vector may go away at once).
Tensor upload_lengths(Context& ctx, const std::vector<int64_t>& lengths);
}  // namespace steno::ops::cuda
