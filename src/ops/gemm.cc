#include "steno/ops/gemm.h"

#include <algorithm>

#include "check.h"
#include "cpu/kernels.h"
#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {

using detail::check_optional;
using detail::check_tensor;

void gemm_raw(Context& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  STENO_CHECK(m >= 0 && n >= 0 && k >= 0, "gemm_raw: negative size m={} n={} k={}", m, n, k);
  // Row-major: op(A) is m x k, stored as m rows of k (or k rows of m when transposed); likewise B, C.
  const int64_t a_cols = trans_a ? m : k, b_cols = trans_b ? k : n;
  STENO_CHECK(lda >= std::max<int64_t>(1, a_cols), "gemm_raw: lda {} < {} ({}A is {}x{})", lda, a_cols,
              trans_a ? "transposed " : "", trans_a ? k : m, a_cols);
  STENO_CHECK(ldb >= std::max<int64_t>(1, b_cols), "gemm_raw: ldb {} < {} ({}B is {}x{})", ldb, b_cols,
              trans_b ? "transposed " : "", trans_b ? n : k, b_cols);
  STENO_CHECK(ldc >= std::max<int64_t>(1, n), "gemm_raw: ldc {} < n {}", ldc, n);
  if (m == 0 || n == 0) return;
  STENO_CHECK(c != nullptr, "gemm_raw: null C for a {}x{} result", m, n);
  STENO_CHECK(k == 0 || (a != nullptr && b != nullptr), "gemm_raw: null A or B with k={}", k);
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("gemm_raw", cuda::gemm_raw(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
    return;
  }
  cpu::gemm_raw(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(Context& ctx, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c, float alpha,
          float beta) {
  check_tensor("gemm", "a", a, ctx);
  check_tensor("gemm", "b", b, ctx);
  check_tensor("gemm", "c", c, ctx);
  STENO_CHECK(a.rank() == 2 && b.rank() == 2 && c.rank() == 2, "gemm: a, b, c must be 2-D, got {}, {}, {}",
              shape_str(a.shape()), shape_str(b.shape()), shape_str(c.shape()));
  const int64_t m = trans_a ? a.dim(1) : a.dim(0), k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t kb = trans_b ? b.dim(1) : b.dim(0), n = trans_b ? b.dim(0) : b.dim(1);
  STENO_CHECK(k == kb, "gemm: inner dimensions differ: op(a) is {}x{} (a {}{}), op(b) is {}x{} (b {}{})", m, k,
              shape_str(a.shape()), trans_a ? "ᵀ" : "", kb, n, shape_str(b.shape()), trans_b ? "ᵀ" : "");
  STENO_CHECK(c.dim(0) == m && c.dim(1) == n, "gemm: c must be [{}, {}] for op(a) {}x{} · op(b) {}x{}, got {}", m,
              n, m, k, kb, n, shape_str(c.shape()));
  detail::check_same_dtype("gemm", {&a, &b, &c});
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("gemm", cuda::gemm(ctx, a, trans_a, b, trans_b, c, alpha, beta));
    return;
  }
  gemm_raw(ctx, trans_a, trans_b, m, n, k, alpha, a.data<float>(), std::max<int64_t>(1, a.dim(1)),
           b.data<float>(), std::max<int64_t>(1, b.dim(1)), beta, c.data<float>(), std::max<int64_t>(1, n));
}

void linear(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  check_tensor("linear", "x", x, ctx);
  check_tensor("linear", "w", w, ctx);
  check_tensor("linear", "y", y, ctx);
  STENO_CHECK(w.rank() == 2, "linear: w must be [N, K], got {}", shape_str(w.shape()));
  const int64_t n = w.dim(0), k = w.dim(1);
  STENO_CHECK(x.rank() >= 1 && x.dim(-1) == k, "linear: x {} does not end in K = {} (w {})", shape_str(x.shape()),
              k, shape_str(w.shape()));
  Shape want = x.shape();
  want.back() = n;
  STENO_CHECK(y.shape() == want, "linear: y must be {} for x {} and w {}, got {}", shape_str(want),
              shape_str(x.shape()), shape_str(w.shape()), shape_str(y.shape()));
  check_optional("linear", "bias", bias, {n}, ctx);
  STENO_CHECK(y.numel() == 0 || y.raw() != x.raw(), "linear: y must not alias x");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("linear", cuda::linear(ctx, x, w, bias, y));
    return;
  }
  cpu::linear(ctx, x, w, bias, y);
}

CpuGemmWarmUp::CpuGemmWarmUp(GemmBackend backend) {
  if (backend == GemmBackend::kOneDnn) thread_ = std::thread(cpu::onednn_first_call);
}

CpuGemmWarmUp::~CpuGemmWarmUp() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace steno::ops
