#include "cublaslt_api.h"

#include <string>

#include "core/run_time_library.h"

namespace steno::ops::cuda {
namespace {

CublasLt load() {
  RunTimeLibrary lib("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR), "the CUDA GEMM library");
  CublasLt t{};
  lib.bind(t.Create, "cublasLtCreate");
  lib.bind(t.Destroy, "cublasLtDestroy");
  lib.bind(t.GetStatusString, "cublasLtGetStatusString");
  lib.bind(t.GetStatusName, "cublasLtGetStatusName");
  lib.bind(t.MatmulDescCreate, "cublasLtMatmulDescCreate");
  lib.bind(t.MatmulDescDestroy, "cublasLtMatmulDescDestroy");
  lib.bind(t.MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  lib.bind(t.MatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  lib.bind(t.MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  lib.bind(t.MatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
  lib.bind(t.MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
  lib.bind(t.MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  lib.bind(t.MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  lib.bind(t.MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  lib.bind(t.Matmul, "cublasLtMatmul");
  lib.require_all();
  return t;
}

}  // namespace

const CublasLt& cublaslt() { return load_once<CublasLt, load>(); }

}  // namespace steno::ops::cuda
