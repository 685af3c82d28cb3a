// GEMMs on cuBLASLt: gemm_raw, gemm and linear (the bias added in the epilogue), f32 / f16 / bf16 storage with
// f32 accumulation (CUBLAS_COMPUTE_32F; f32 without TF32, so f32 results match the CPU to ~1e-6 relative); and
// linear_fp8: E4M3 operands with one f32 scale per row of each (cuBLASLt's outer-vector scaling), f16 / bf16
// output, f32 accumulation.
//
// Layout mapping. steno is row-major, cuBLASLt column-major. A row-major X [r, c] with leading dimension ld is,
// read column-major, the matrix Xᵀ [c, r] with the same ld, so the row-major C = op(A)·op(B) is issued as the
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLASLt's first operand is steno's B, its second is steno's A, its (m, n)
// are steno's (n, m), and each operand keeps its own transpose flag. No data moves. Under this mapping the BIAS
// epilogue (a vector along D's rows, broadcast over its columns) adds bias[j] to column j of every row of
// steno's C [M, N]: nn.Linear's bias. (CUBLASLT_ORDER_ROW layouts would express the same, but fewer kernels take
// them.) The bias has C's dtype, which is what cuBLASLt expects for f32 / f16 / bf16 outputs
// (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE defaults to Dtype; we set it explicitly). Should the heuristic offer no
// algorithm with the epilogue for some shape, the bias is added by a kernel after the product instead.
//
// CUDA graphs: the matmul path allocates nothing and never synchronizes: descriptors are host objects, the
// workspace is the context's, and the algorithm comes from a cache filled by the first call of each shape (run
// that call eagerly before capturing).

// resources.h first: it names steno::cuda as `cuda::` from namespace steno::ops, which only resolves before
// kernels.h / launch.h declare steno::ops::cuda.
#include "resources.h"

#include <algorithm>
#include <compare>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>

#include "check.h"
#include "cublaslt_api.h"
#include "kernels.h"
#include "launch.h"
#include "elementwise_launch.h"
#include "steno/core/error.h"

namespace steno::ops::cuda {

namespace {

// One row-major GEMM: c = alpha * op(a)·op(b) + beta * c (+ bias[n] on every row), all of dtype dt.
struct Gemm {
  Dt dt;
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha;
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  float beta;
  void* c;
  int64_t ldc;
  const void* bias;  // [n] or null
  // C in f32 whatever dt is (f16/bf16 operands, f32 results: attention's scores before their softmax).
  bool c_f32 = false;
  // Strided batch: `batch` products, operand X of product i at x + i * stride_x elements.
  int32_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  // FP8: A and B hold E4M3 values (C, the bias and the scales' products in dt); row i of op(A) is scaled by
  // a_scales[i] (m of them), row j of B as stored transposed, i.e. column j of op(B), by b_scales[j] (n). Only
  // trans_a = false, trans_b = true (cuBLASLt's FP8 kernels take "TN" products only: a linear layer's shape).
  bool fp8 = false;
  const float* a_scales = nullptr;
  const float* b_scales = nullptr;
};

void check_status(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    fail(ErrorCode::kInternal, "cuBLASLt {} failed: {} ({})", what, cublaslt().GetStatusString(st),
         cublaslt().GetStatusName(st));
}

cudaDataType_t cuda_type(Dt dt) {
  switch (dt) {
    case Dt::kF16: return CUDA_R_16F;
    case Dt::kBF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

// The largest power of two (up to 256, cuBLASLt's default assumption) dividing the address. Tensors from the
// context allocator are 256-byte aligned, but narrowed views and gemm_raw pointers need not be.
uint32_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

// The alignment every product of a strided batch keeps: the first pointer's, and the stride's in bytes.
uint32_t alignment(const void* p, int32_t batch, int64_t stride, int64_t elem_bytes) {
  const uint32_t a = alignment(p);
  if (batch <= 1) return a;
  return std::min(a, alignment(reinterpret_cast<const void*>(static_cast<uintptr_t>(stride * elem_bytes))));
}

int64_t elem_bytes(Dt dt) { return dt == Dt::kF32 ? 4 : 2; }

// Owners of the cuBLASLt descriptor handles (Destroy: the table's function that frees one).
template <typename H, auto CublasLt::*Destroy>
struct Owned {
  H h = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (h != nullptr) (cublaslt().*Destroy)(h);
  }
};
using MatmulDesc = Owned<cublasLtMatmulDesc_t, &CublasLt::MatmulDescDestroy>;
using Layout = Owned<cublasLtMatrixLayout_t, &CublasLt::MatrixLayoutDestroy>;
using Preference = Owned<cublasLtMatmulPreference_t, &CublasLt::MatmulPreferenceDestroy>;

template <typename V>
void set_desc(const MatmulDesc& d, cublasLtMatmulDescAttributes_t attr, const V& v) {
  check_status(cublaslt().MatmulDescSetAttribute(d.h, attr, &v, sizeof(v)), "MatmulDescSetAttribute");
}

template <typename V>
void set_pref(const Preference& p, cublasLtMatmulPreferenceAttributes_t attr, const V& v) {
  check_status(cublaslt().MatmulPreferenceSetAttribute(p.h, attr, &v, sizeof(v)), "MatmulPreferenceSetAttribute");
}

// A row-major matrix [rows, cols] with leading dimension ld, as cuBLASLt's column-major [cols, rows]; with
// batch > 1, `batch` of them `stride` elements apart.
void make_layout(Layout& l, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int32_t batch = 1,
                 int64_t stride = 0) {
  check_status(cublaslt().MatrixLayoutCreate(&l.h, type, static_cast<uint64_t>(cols),
                                          static_cast<uint64_t>(rows), ld),
               "MatrixLayoutCreate");
  if (batch > 1) {
    check_status(cublaslt().MatrixLayoutSetAttribute(l.h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)),
                 "MatrixLayoutSetAttribute(BATCH_COUNT)");
    check_status(cublaslt().MatrixLayoutSetAttribute(l.h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                  sizeof(stride)),
                 "MatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
}

// Everything the heuristic's choice depends on. Pointer alignments are part of it: an algorithm chosen for
// 256-byte aligned operands may not run on a narrowed view.
struct PlanKey {
  int device;
  Dt dt;
  bool trans_a, trans_b, bias, c_f32, fp8;
  int64_t m, n, k, lda, ldb, ldc;
  int32_t batch;
  int64_t stride_a, stride_b, stride_c;
  uint32_t align_a, align_b, align_c, align_bias;
  auto operator<=>(const PlanKey&) const = default;
};

struct Plan {
  cublasLtMatmulAlgo_t algo;
  // False when cuBLASLt offers no algorithm with the BIAS epilogue for this problem: the bias is then added by a
  // small kernel after the product (not expected on Hopper for f32 / f16 / bf16; kept so that an unusual shape or
  // alignment still runs).
  bool bias_in_epilogue;
};

// The chosen plan per problem, shared by every context of the process (the choice depends on the device and the
// problem only), so steady-state calls make no heuristic query. Bounded: an encoder sees one M per distinct batch
// length, so a long-running server would otherwise grow it without limit.
class PlanCache {
 public:
  bool find(const PlanKey& key, Plan* plan) {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    *plan = it->second;
    return true;
  }
  void insert(const PlanKey& key, const Plan& plan) {
    std::lock_guard lock(mu_);
    if (map_.size() >= kMaxEntries) map_.clear();
    map_.emplace(key, plan);
  }

 private:
  static constexpr size_t kMaxEntries = 8192;
  std::mutex mu_;
  std::map<PlanKey, Plan> map_;
};

PlanCache& plan_cache() {
  static auto* cache = new PlanCache();  // leaked on purpose: contexts may outlive static destruction
  return *cache;
}

// FP8 products accumulate in the tensor cores' fast mode (no periodic promotion to f32) under
// $STENO_FP8_FAST_ACCUM=1: the benchmarks' arm for speed against accuracy; off by default.
bool fp8_fast_accumulation() {
  static const bool on = [] {
    const char* v = std::getenv("STENO_FP8_FAST_ACCUM");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return on;
}

// The operation: f32 accumulation and f32 alpha/beta for every storage dtype; with_bias adds the BIAS epilogue.
void make_desc(MatmulDesc& desc, const Gemm& g, bool with_bias) {
  check_status(cublaslt().MatmulDescCreate(&desc.h, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
  // cuBLASLt's A is steno's B and vice versa (see the top of the file).
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N));
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N));
  if (g.fp8) {
    // cuBLASLt's A (steno's B, the weight) has one scale per row of its op(A), i.e. per output channel; its B
    // (steno's A, the activations) one per column of op(B), i.e. per token: "outer vector" scaling.
    const auto outer = static_cast<int32_t>(CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F);
    set_desc(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, outer);
    set_desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, outer);
    set_desc(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(g.b_scales));
    set_desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(g.a_scales));
    if (fp8_fast_accumulation()) set_desc(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<int8_t>(1));
  }
  if (with_bias) {
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(CUBLASLT_EPILOGUE_BIAS));
    // The heuristic reads the pointer's alignment from here, so it is set before the query too.
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(cuda_type(g.dt)));
  }
}

// The heuristic's best algorithm for `desc`, or false when it has none.
bool query_algo(cublasLtHandle_t handle, const PlanKey& key, const MatmulDesc& desc, const Layout& first,
                const Layout& second, const Layout& out, cublasLtMatmulAlgo_t* algo) {
  Preference pref;
  check_status(cublaslt().MatmulPreferenceCreate(&pref.h), "MatmulPreferenceCreate");
  set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(CudaResources::kWorkspaceBytes));
  // Split-K only with f32 partial sums in the workspace: no partial sums rounded to f16/bf16, and no in-place
  // (counter-ordered) reduction, so every call of a shape gives bit-identical results.
  set_pref(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
           static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c);
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  const cublasStatus_t st = cublaslt().MatmulAlgoGetHeuristic(handle, desc.h, first.h, second.h, out.h, out.h, pref.h,
                                                           1, &result, &count);
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) check_status(st, "MatmulAlgoGetHeuristic");
  if (st != CUBLAS_STATUS_SUCCESS || count == 0) return false;
  *algo = result.algo;
  return true;
}

const char* dt_name(Dt dt) { return dt == Dt::kF32 ? "f32" : dt == Dt::kF16 ? "f16" : "bf16"; }

void run(Context& ctx, const Gemm& g) {
  if (g.m == 0 || g.n == 0) return;
  CudaResources& res = ctx.cuda_resources();
  const auto stream = static_cast<cudaStream_t>(res.stream.handle());
  if (g.k == 0) {  // alpha * op(A)·op(B) is an empty sum: C = beta * C (+ bias), not a cuBLASLt case
    if (g.batch > 1 || g.c_f32) fail(ErrorCode::kInternal, "gemm: k = 0 in a batched or f32-output product");
    launch_scale_matrix(g.dt, g.c, g.m, g.n, g.ldc, g.beta, g.bias, stream);
    check_launch("gemm (k = 0)");
    return;
  }
  const auto handle = static_cast<cublasLtHandle_t>(res.cublaslt);
  // Stored shapes (row-major): B is [k, n] or [n, k] when transposed, A is [m, k] or [k, m], C is [m, n].
  const Dt c_dt = g.c_f32 ? Dt::kF32 : g.dt;
  const cudaDataType_t operands = g.fp8 ? CUDA_R_8F_E4M3 : cuda_type(g.dt);
  Layout first, second, out;
  make_layout(first, operands, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.batch, g.stride_b);
  make_layout(second, operands, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.batch, g.stride_a);
  make_layout(out, cuda_type(c_dt), g.m, g.n, g.ldc, g.batch, g.stride_c);

  const bool bias = g.bias != nullptr;
  const int64_t eb = g.fp8 ? 1 : elem_bytes(g.dt);
  const PlanKey key{.device = res.device, .dt = g.dt, .trans_a = g.trans_a, .trans_b = g.trans_b, .bias = bias,
                    .c_f32 = g.c_f32, .fp8 = g.fp8, .m = g.m, .n = g.n, .k = g.k, .lda = g.lda, .ldb = g.ldb, .ldc = g.ldc,
                    .batch = g.batch, .stride_a = g.stride_a, .stride_b = g.stride_b, .stride_c = g.stride_c,
                    .align_a = alignment(g.a, g.batch, g.stride_a, eb),
                    .align_b = alignment(g.b, g.batch, g.stride_b, eb),
                    .align_c = alignment(g.c, g.batch, g.stride_c, elem_bytes(c_dt)),
                    .align_bias = bias ? alignment(g.bias) : 0u};
  Plan plan{};
  MatmulDesc desc;
  if (plan_cache().find(key, &plan)) {
    make_desc(desc, g, plan.bias_in_epilogue);
  } else {
    make_desc(desc, g, bias);
    plan.bias_in_epilogue = bias;
    if (!query_algo(handle, key, desc, first, second, out, &plan.algo)) {
      MatmulDesc plain;  // without the epilogue; the bias kernel below adds it
      make_desc(plain, g, false);
      if (!bias || !query_algo(handle, key, plain, first, second, out, &plan.algo))
        fail(ErrorCode::kInternal,
             "cuBLASLt has no algorithm for the {}{} GEMM m={} n={} k={} (trans_a {}, trans_b {}, lda {}, ldb {}, "
             "ldc {}, bias {}, f32 output {}, batch {}, alignments a {} b {} c {} bytes)",
             g.fp8 ? "fp8 -> " : "", dt_name(g.dt), g.m, g.n, g.k, g.trans_a, g.trans_b, g.lda, g.ldb, g.ldc, bias, g.c_f32, g.batch,
             key.align_a, key.align_b, key.align_c);
      plan.bias_in_epilogue = false;
      std::swap(desc.h, plain.h);
    }
    plan_cache().insert(key, plan);
  }
  check_status(cublaslt().Matmul(handle, desc.h, &g.alpha, g.b, first.h, g.a, second.h, &g.beta, g.c, out.h, g.c,
                              out.h, &plan.algo, res.workspace, CudaResources::kWorkspaceBytes, stream),
               "cublasLtMatmul");
  if (bias && !plan.bias_in_epilogue) {
    launch_scale_matrix(g.dt, g.c, g.m, g.n, g.ldc, 1.0f, g.bias, stream);
    check_launch("gemm bias");
  }
}

}  // namespace

void gemm_raw(Context& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  run(ctx, {Dt::kF32, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr});
}

void gemm_dt(Context& ctx, Dt dt, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a,
             int64_t lda, const void* b, int64_t ldb, float beta, void* c, int64_t ldc) {
  run(ctx, {dt, trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc, nullptr});
}

void gemm_batched_dt(Context& ctx, Dt dt, bool c_f32, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     const BatchedOperand& a, const BatchedOperand& b, const BatchedOutput& c, int32_t batch) {
  Gemm g{dt, trans_a, trans_b, m, n, k, 1.0f, a.p, a.ld, b.p, b.ld, 0.0f, c.p, c.ld, nullptr};
  g.c_f32 = c_f32;
  g.batch = batch;
  g.stride_a = a.stride;
  g.stride_b = b.stride;
  g.stride_c = c.stride;
  run(ctx, g);
}

void gemm(Context& ctx, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c, float alpha,
          float beta) {
  detail::check_same_dtype("gemm", {&a, &b, &c});
  const int64_t m = trans_a ? a.dim(1) : a.dim(0), k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  run(ctx, {dt_of(a), trans_a, trans_b, m, n, k, alpha, a.raw(), std::max<int64_t>(1, a.dim(1)), b.raw(),
            std::max<int64_t>(1, b.dim(1)), beta, c.raw(), std::max<int64_t>(1, n), nullptr});
}

void linear_fp8(Context& ctx, const Fp8Rows& x, const Fp8Rows& w, const Tensor& bias, Tensor& y) {
  detail::check_same_dtype("linear_fp8", {&y, &bias});
  const int64_t m = x.rows(), n = w.rows(), k = w.cols();
  Gemm g{dt_of(y), false, true, m, n, k, 1.0f, x.values.raw(), k, w.values.raw(), k, 0.0f, y.raw(),
         std::max<int64_t>(1, n), bias.defined() ? bias.raw() : nullptr};
  g.fp8 = true;
  g.a_scales = x.scales.data<float>();
  g.b_scales = w.scales.data<float>();
  run(ctx, g);
}

void linear(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  detail::check_same_dtype("linear", {&x, &w, &bias, &y});
  const int64_t n = w.dim(0), k = w.dim(1);
  const int64_t m = n > 0 ? y.numel() / n : 0;  // y holds x's leading dimensions
  const int64_t ld = std::max<int64_t>(1, k);
  run(ctx, {dt_of(x), false, true, m, n, k, 1.0f, x.raw(), ld, w.raw(), ld, 0.0f, y.raw(), std::max<int64_t>(1, n),
            bias.defined() ? bias.raw() : nullptr});
}

}  // namespace steno::ops::cuda
