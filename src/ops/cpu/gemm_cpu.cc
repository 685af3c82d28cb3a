// SGEMM through oneDNN or OpenBLAS, and the ops built on it.
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "cpu/gemm_libraries.h"
#include "cpu/kernels.h"
#include "steno/core/error.h"

namespace steno::ops::cpu {

void set_gemm_threads(GemmBackend backend, int num_threads) {
  num_threads = std::max(1, num_threads);
  // Both libraries run on OpenMP (oneDNN's Debian build, OpenBLAS's openmp build) and size their team from the
  // calling thread's nthreads ICV. OpenBLAS also keeps a process-wide count, set only outside parallel regions.
  if (omp_get_max_threads() != num_threads) omp_set_num_threads(num_threads);
  if (backend == GemmBackend::kOpenBlas && !omp_in_parallel() && openblas().get_num_threads() != num_threads)
    openblas().set_num_threads(num_threads);
}

void onednn_first_call() {
  omp_set_num_threads(1);  // this thread's own setting: no OpenMP team is made for it
  float a[16 * 16] = {}, c[16 * 16];
  onednn().sgemm('N', 'N', 16, 16, 16, 1.0f, a, 16, a, 16, 0.0f, c, 16);
}

// Up to this many rows of A, OpenBLAS is called once per row (sgemv) rather than once (sgemm): measured on the
// bundled model's beam search (bench/engine_bench, BM_Bundled_BeamDecoder).
constexpr int64_t kOpenBlasGemvRows = 8;

void sgemm(GemmBackend backend, int num_threads, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
           float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // C = beta * C; with beta == 0, C is not read (it may hold NaN), as in BLAS
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      if (beta == 0.0f)
        std::memset(row, 0, static_cast<size_t>(n) * sizeof(float));
      else
        for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
    return;
  }
  // Inside a parallel_for chunk (an OpenMP parallel region) the GEMM runs on the calling thread alone.
  set_gemm_threads(backend, omp_in_parallel() ? 1 : num_threads);
  if (backend == GemmBackend::kOneDnn) {
    const dnnl_status_t st = onednn().sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                                            ldb, beta, c, ldc);
    if (st != dnnl_success)
      fail(ErrorCode::kInternal, "dnnl_sgemm({}x{}x{}, lda {}, ldb {}, ldc {}) failed with status {}", m, n, k,
           lda, ldb, ldc, static_cast<int>(st));
  } else {
    const int64_t most = std::max({m, n, k, lda, ldb, ldc});
    if (most > INT_MAX)
      fail(ErrorCode::kOutOfRange, "gemm {}x{}x{}: dimensions exceed OpenBLAS's 32-bit indices", m, n, k);
    if (m <= kOpenBlasGemvRows) {
      // A few rows times a matrix (an LSTM step of a few hypotheses): OpenBLAS's sgemm has no GEMV shortcut and
      // packs the whole of B on every call, which costs more than reading it once per row.
      const int inc_a = trans_a ? static_cast<int>(lda) : 1;
      for (int64_t i = 0; i < m; ++i) {
        const float* row = trans_a ? a + i : a + i * lda;
        if (trans_b)  // B [N, K]: c = B · a
          openblas().sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(n), static_cast<int>(k), alpha, b,
                           static_cast<int>(ldb), row, inc_a, beta, c + i * ldc, 1);
        else  // B [K, N]: c = Bᵀ · a
          openblas().sgemv(CblasRowMajor, CblasTrans, static_cast<int>(k), static_cast<int>(n), alpha, b,
                           static_cast<int>(ldb), row, inc_a, beta, c + i * ldc, 1);
      }
      return;
    }
    openblas().sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                     static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda),
                     b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  }
}

void gemm_raw(Context& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  sgemm(ctx.gemm_backend(), ctx.num_threads(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void fill_rows(Context& ctx, float* y, int64_t rows, int64_t n, const float* v) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  ctx.pool().parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)),
                          [&](int64_t r0, int64_t r1) {
                            for (int64_t r = r0; r < r1; ++r) std::memcpy(y + r * n, v, bytes);
                          });
}

void linear(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  const int64_t n = w.dim(0), k = w.dim(1);
  const int64_t m = n > 0 ? y.numel() / n : 0;  // y holds x's leading dimensions
  float* yp = y.data<float>();
  float beta = 0.0f;
  if (bias.defined()) {
    fill_rows(ctx, yp, m, n, bias.data<float>());
    beta = 1.0f;
  }
  gemm_raw(ctx, false, true, m, n, k, 1.0f, x.data<float>(), k, w.data<float>(), k, beta, yp, n);
}

}  // namespace steno::ops::cpu
