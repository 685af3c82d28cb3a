#include "cpu/gemm_libraries.h"

#include <string>

#include "core/run_time_library.h"

namespace steno::ops::cpu {
namespace {

// STENO_ONEDNN_LIBRARY and STENO_OPENBLAS_LIBRARY: the files CMake found, resolved to their sonames' links (for
// example /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0; src/ops/CMakeLists.txt).
OneDnnApi load_onednn() {
  RunTimeLibrary lib(configured_library(STENO_ONEDNN_LIBRARY), "oneDNN, the CPU GEMM library");
  OneDnnApi t{};
  lib.bind(t.sgemm, "dnnl_sgemm");
  lib.require_all();
  return t;
}

OpenBlasApi load_openblas() {
  RunTimeLibrary lib(configured_library(STENO_OPENBLAS_LIBRARY), "OpenBLAS, the CPU GEMM library");
  OpenBlasApi t{};
  lib.bind(t.sgemm, "cblas_sgemm");
  lib.bind(t.sgemv, "cblas_sgemv");
  lib.bind(t.get_num_threads, "openblas_get_num_threads");
  lib.bind(t.set_num_threads, "openblas_set_num_threads");
  lib.require_all();
  return t;
}

}  // namespace

const OneDnnApi& onednn() { return load_once<OneDnnApi, load_onednn>(); }
const OpenBlasApi& openblas() { return load_once<OpenBlasApi, load_openblas>(); }

}  // namespace steno::ops::cpu
