// Matrix products. All matrices are row-major fp32 on the context's device.
#pragma once

#include <cstdint>
#include <thread>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

// C[M,N] = alpha * op(A) * op(B) + beta * C, with op(X) = X or Xᵀ, leading dimensions in elements.
// A is [M,K] (or [K,M] when trans_a), B is [K,N] (or [N,K] when trans_b). The building block of the others.
void gemm_raw(Context& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// c = alpha * op(a) * op(b) + beta * c for 2-D tensors; shapes are checked.
void gemm(Context& ctx, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c,
          float alpha = 1.0f, float beta = 0.0f);

// y[..., N] = x[..., K] · wᵀ + bias, with w [N, K] (PyTorch's nn.Linear layout) and bias [N] or undefined.
// y must be preallocated with x's leading dimensions and N; it must not alias x.
void linear(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y);

// oneDNN makes its SGEMM kernels for the CPU's instruction set at its first call: 36 ms on an AVX-512 machine of 2
// cores, paid by whichever GEMM comes first (a CLI's front end on a 3 s clip: 45 ms, 4 once the kernels exist). A
// command about to load a model and run it on the CPU makes one of these first: the kernels are made on a thread
// of its own while the model loads, and a GEMM meanwhile waits inside oneDNN for them. The destructor joins the
// thread: a process must not exit under it (oneDNN's statics would go while it used them). Nothing for OpenBLAS.
class CpuGemmWarmUp {
 public:
  explicit CpuGemmWarmUp(GemmBackend backend);
  ~CpuGemmWarmUp();
  CpuGemmWarmUp(const CpuGemmWarmUp&) = delete;
  CpuGemmWarmUp& operator=(const CpuGemmWarmUp&) = delete;

 private:
  std::thread thread_;
};

}  // namespace steno::ops
