// cuBLASLt opened at run time, by the first CUDA context: linked, its library (half a gigabyte) cost every steno
// process 90 ms and 210 MiB of resident memory at start on a 2-core machine, a CPU-only run included. The
// functions steno calls, named as in cuBLASLt without the prefix, in one table; the types are cublasLt.h's.
#pragma once

#include <cublasLt.h>

namespace steno::ops::cuda {

struct CublasLt {
  decltype(&::cublasLtCreate) Create;
  decltype(&::cublasLtDestroy) Destroy;
  decltype(&::cublasLtGetStatusString) GetStatusString;
  decltype(&::cublasLtGetStatusName) GetStatusName;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&::cublasLtMatmul) Matmul;
};

// The table, loading libcublasLt.so.<the major version steno was built with> on first use (thread-safe); throws
// kUnavailable, with the loader's message, when the library or one of its functions is missing.
const CublasLt& cublaslt();

}  // namespace steno::ops::cuda
