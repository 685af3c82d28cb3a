// How far cuBLASLt's first heuristic choice is from the best of its candidates on the small, skinny GEMMs of the
// GPU TDT decoder's step (the LSTM's gates, the joint's output, the prediction projection at bucket sizes 1 to 32)
// and on two encoder shapes for contrast. Each candidate of the heuristic (up to 16, in its order, f32 split-K
// partial sums only, as ops::linear asks) is timed on its own: bf16 operands, f32 accumulation, row-major
// y[M, N] = x[M, K] · w[N, K]ᵀ as ops::linear computes it. The answer says whether picking the GEMM algorithm by
// measurement (autotuning) is worth building for the decoder.
// The encoder's linear layers at 32 x 45 s (M = 18,016 frames) also run in FP8 (E4M3 operands, bf16 output):
// with one scale per row of each operand (outer-vector scaling, as ops::linear_fp8), with one scale per tensor,
// and each with the tensor cores' fast accumulation: how fast FP8 products can be, and which scaling costs what.
//
//   gemm_candidates_bench [--benchmark_* flags]
#include <benchmark/benchmark.h>
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cublas status " + std::to_string(s));
}

struct Shape {
  const char* what;
  int m, n, k;
};
const Shape kShapes[] = {
    {"lstm_gates", 1, 2560, 1280}, {"lstm_gates", 8, 2560, 1280}, {"lstm_gates", 32, 2560, 1280},
    {"joint_out", 1, 1030, 640},   {"joint_out", 8, 1030, 640},   {"joint_out", 32, 1030, 640},
    {"pred_proj", 32, 640, 640},   {"ffn_in", 18016, 4096, 1024}, {"qkv", 563, 1024, 1024},
};
// The 0.6b encoder layer's linear layers at 32 x 45 s, in every precision.
const Shape kEncoderShapes[] = {
    {"enc_ffn_in", 18016, 4096, 1024},
    {"enc_ffn_out", 18016, 1024, 4096},
    {"enc_qkv", 18016, 1024, 1024},
    {"enc_pw1", 18016, 2048, 1024},
};

enum class Kind { kBf16, kFp8Rows, kFp8RowsFast, kFp8Tensor, kFp8TensorFast };
const Kind kKinds[] = {Kind::kBf16, Kind::kFp8Rows, Kind::kFp8RowsFast, Kind::kFp8Tensor, Kind::kFp8TensorFast};
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kBf16: return "bf16";
    case Kind::kFp8Rows: return "fp8_rows";
    case Kind::kFp8RowsFast: return "fp8_rows_fast";
    case Kind::kFp8Tensor: return "fp8_tensor";
    case Kind::kFp8TensorFast: return "fp8_tensor_fast";
  }
  return "?";
}
constexpr size_t kWorkspace = size_t{32} << 20;

struct Gpu {
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  Gpu() {
    check(cublasLtCreate(&lt), "cublasLtCreate");
    check(cudaStreamCreate(&stream), "cudaStreamCreate");
    check(cudaMalloc(&workspace, kWorkspace), "cudaMalloc");
  }
};
Gpu& gpu() {
  static Gpu* g = new Gpu();  // leaked: the benchmarks end with the process
  return *g;
}

struct Problem {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  void *w = nullptr, *x = nullptr, *y = nullptr;
  float *w_scales = nullptr, *x_scales = nullptr;  // FP8: all ones (n and m of them, or one each per tensor)
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  explicit Problem(const Shape& s, Kind kind = Kind::kBf16) {
    // Column-major view: yᵀ[N, M] = w[N, K] · xᵀ[K, M], w stored as K x N (transposed), x as K x M.
    check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "TRANSA");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n), "TRANSB");
    const bool fp8 = kind != Kind::kBf16;
    const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    const size_t in_bytes = fp8 ? 1 : 2;
    if (fp8) set_scales(s, kind);
    check(cublasLtMatrixLayoutCreate(&a, in, s.k, s.n, s.k), "layout A");
    check(cublasLtMatrixLayoutCreate(&b, in, s.k, s.m, s.k), "layout B");
    check(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, s.n, s.m, s.n), "layout C");
    check(cudaMalloc(&w, size_t(s.n) * s.k * in_bytes), "cudaMalloc w");
    check(cudaMalloc(&x, size_t(s.m) * s.k * in_bytes), "cudaMalloc x");
    check(cudaMalloc(&y, size_t(s.m) * s.n * 2), "cudaMalloc y");
    check(cudaMemset(w, 0x3c, size_t(s.n) * s.k * in_bytes), "memset");  // small finite values (bf16: 0x3c3c,
    check(cudaMemset(x, 0x3c, size_t(s.m) * s.k * in_bytes), "memset");  // E4M3: 0x3c = 1.5)
    cublasLtMatmulPreference_t pref = nullptr;
    check(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    const uint64_t ws = kWorkspace;
    const uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "ws");
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &scheme,
                                               sizeof scheme),
          "scheme");
    candidates.resize(16);
    int count = 0;
    check(cublasLtMatmulAlgoGetHeuristic(gpu().lt, desc, a, b, c, c, pref, 16, candidates.data(), &count),
          "AlgoGetHeuristic");
    candidates.resize(static_cast<size_t>(count));
    cublasLtMatmulPreferenceDestroy(pref);
  }
  // The scale attributes of an FP8 product: modes, and device vectors of ones.
  void set_scales(const Shape& s, Kind kind) {
    const bool rows = kind == Kind::kFp8Rows || kind == Kind::kFp8RowsFast;
    const int32_t mode = rows ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode), "A mode");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode), "B mode");
    const std::vector<float> ones(static_cast<size_t>(std::max(s.m, s.n)), 1.0f);
    check(cudaMalloc(reinterpret_cast<void**>(&w_scales), ones.size() * sizeof(float)), "cudaMalloc scales");
    check(cudaMalloc(reinterpret_cast<void**>(&x_scales), ones.size() * sizeof(float)), "cudaMalloc scales");
    check(cudaMemcpy(w_scales, ones.data(), ones.size() * sizeof(float), cudaMemcpyHostToDevice), "scales");
    check(cudaMemcpy(x_scales, ones.data(), ones.size() * sizeof(float), cudaMemcpyHostToDevice), "scales");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scales, sizeof w_scales),
          "A scale");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scales, sizeof x_scales),
          "B scale");
    if (kind == Kind::kFp8RowsFast || kind == Kind::kFp8TensorFast) {
      const int8_t fast = 1;
      check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast), "fast");
    }
  }
  ~Problem() {
    cudaFree(w), cudaFree(x), cudaFree(y), cudaFree(w_scales), cudaFree(x_scales);
    cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(c);
    cublasLtMatmulDescDestroy(desc);
  }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;
  void run(size_t i) const {
    const float one = 1.0f, zero = 0.0f;
    check(cublasLtMatmul(gpu().lt, desc, &one, w, a, x, b, &zero, y, c, y, c, &candidates[i].algo, gpu().workspace,
                         kWorkspace, gpu().stream),
          "Matmul");
  }
};

void time_candidate(benchmark::State& state, const Shape& s, size_t i, Kind kind = Kind::kBf16) {
  const auto p = std::make_unique<Problem>(s, kind);  // the heuristic is asked again: its answer is deterministic
  if (i >= p->candidates.size()) {
    state.SkipWithError("no such candidate");
    return;
  }
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  for (int w = 0; w < 5; ++w) p->run(i);
  constexpr int kCalls = 50;
  double total_ms = 0;
  for (auto _ : state) {
    check(cudaEventRecord(start, gpu().stream), "record");
    for (int r = 0; r < kCalls; ++r) p->run(i);
    check(cudaEventRecord(stop, gpu().stream), "record");
    check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    state.SetIterationTime(ms / 1e3 / kCalls);
    total_ms += ms;
  }
  const double us = total_ms * 1e3 / kCalls / static_cast<double>(state.iterations());
  state.counters["us"] = us;
  state.counters["tflops"] = 2.0 * s.m * s.n * s.k / (us * 1e-6) / 1e12;
  state.counters["heuristic_rank"] = static_cast<double>(i);
  state.counters["waves"] = p->candidates[i].wavesCount;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "gemm_candidates_bench: no CUDA device\n");
    return 1;
  }
  for (const Shape& s : kShapes)
    for (size_t i = 0; i < 16; ++i) {
      const std::string name = std::string("gemm/") + s.what + "/m" + std::to_string(s.m) + "_n" +
                               std::to_string(s.n) + "_k" + std::to_string(s.k) + "/candidate" + std::to_string(i);
      benchmark::RegisterBenchmark(name.c_str(), [s, i](benchmark::State& st) {
        try {
          time_candidate(st, s, i);
        } catch (const std::exception& e) {
          st.SkipWithError(e.what());
        }
      })->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(20);
    }
  for (const Shape& s : kEncoderShapes)
    for (Kind kind : kKinds)
      for (size_t i = 0; i < 16; ++i) {
        const std::string name = std::string("gemm/") + s.what + "/" + kind_name(kind) + "/m" + std::to_string(s.m) +
                                 "_n" + std::to_string(s.n) + "_k" + std::to_string(s.k) + "/candidate" +
                                 std::to_string(i);
        benchmark::RegisterBenchmark(name.c_str(), [s, i, kind](benchmark::State& st) {
          try {
            time_candidate(st, s, i, kind);
          } catch (const std::exception& e) {
            st.SkipWithError(e.what());
          }
        })->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(10);
      }
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
