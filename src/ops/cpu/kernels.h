// CPU kernels behind the ops in include/steno/ops/. Private to steno_ops (and its tests). The entry points in
// src/ops/<group>.cc have validated every argument (dtypes, shapes, devices) before these run.
#pragma once

#include <cstdint>
#include <vector>

#include "steno/core/tensor.h"
#include "steno/ops/attention.h"
#include "steno/ops/context.h"

namespace steno::ops::cpu {

// ---- gemm_cpu.cc ----
// Row-major SGEMM through `backend` on up to `num_threads` threads of the calling thread's OpenMP team. Called
// from inside ThreadPool::parallel_for (an OpenMP parallel region) it runs single-threaded on the calling thread,
// so kernels may issue many small GEMMs in parallel.
void sgemm(GemmBackend backend, int num_threads, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
           float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc);
// Sets the thread count for GEMMs issued from this thread (its OpenMP ICV; for OpenBLAS outside parallel regions
// also the library's process-wide count).
void set_gemm_threads(GemmBackend backend, int num_threads);
// The first oneDNN SGEMM of the process on a tiny problem, on the calling thread alone (CpuGemmWarmUp's thread).
void onednn_first_call();
void gemm_raw(Context& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void linear(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y);
// rows x n: every row of y = v (a bias broadcast).
void fill_rows(Context& ctx, float* y, int64_t rows, int64_t n, const float* v);

// ---- conv_cpu.cc ----
void conv2d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y, int stride_h,
            int stride_w, int pad_h, int pad_w, int groups);
void depthwise_conv1d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                      int pad_left, int pad_right);

// ---- norm_cpu.cc ----
void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y);
void batch_norm(Context& ctx, const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                const Tensor& beta, float eps, Tensor& y);
void fold_batch_norm(Tensor& w, Tensor& bias, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                     const Tensor& beta, float eps);

// ---- activation_cpu.cc ----
void relu(Context& ctx, const Tensor& x, Tensor& y);
void silu(Context& ctx, const Tensor& x, Tensor& y);
void sigmoid(Context& ctx, const Tensor& x, Tensor& y);
void glu(Context& ctx, const Tensor& x, Tensor& y);
void softmax(Context& ctx, const Tensor& x, Tensor& y);
// Row kernels shared with other ops.
void sigmoid_row(const float* x, float* y, int64_t n);
void tanh_row(const float* x, float* y, int64_t n);

// ---- elementwise_cpu.cc ----
void add(Context& ctx, const Tensor& a, const Tensor& b, float alpha, Tensor& y);
void scale(Context& ctx, Tensor& x, float s);
void zero_padded_frames(Context& ctx, Tensor& x, int time_axis, const std::vector<int64_t>& lengths);

// ---- attention_cpu.cc ----
enum class AttentionAlgo {
  kAuto,   // banded (O(T*w)) for a window, query-blocked dense otherwise
  kDense,  // every (b, h): all T x T scores and 2T-1 positional rows, window applied as a mask (NeMo's way);
           // for tests, as the reference the banded path must match
};
void rel_pos_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                       const Tensor& pos_bias_u, const Tensor& pos_bias_v, const std::vector<int64_t>& lengths,
                       AttentionWindow window, Tensor& out, AttentionAlgo algo = AttentionAlgo::kAuto);

void self_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                    const std::vector<int64_t>& lengths, Tensor& out);

// ---- lstm_cpu.cc ----
void lstm_cell(Context& ctx, const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
               const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, Tensor& h_out, Tensor& c_out);
void lstm_cell_projected(Context& ctx, Tensor& z, const Tensor& h, const Tensor& c, const Tensor& w_hh, Tensor& h_out,
                         Tensor& c_out);
void lstm_layer(Context& ctx, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh, Tensor& h, Tensor& c, Tensor& y);

}  // namespace steno::ops::cpu
