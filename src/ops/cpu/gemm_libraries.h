// The CPU GEMM libraries, oneDNN and OpenBLAS, opened at run time by the first GEMM that uses each (and oneDNN's
// warm-up thread, onednn_first_call): linked, each cost every steno process a few milliseconds of its start on a
// 2-core machine (an empty program linked with libdnnl: +7 ms of CPU; with OpenBLAS, whose constructor sets up its
// buffers: +5 ms) whether or not it multiplies anything (`steno --help`, `model info`, a worker that only decodes). The functions steno calls, named as in the
// libraries without their prefixes, in one table each; the types are the libraries' own headers'.
#pragma once

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

namespace steno::ops::cpu {

struct OneDnnApi {
  decltype(&::dnnl_sgemm) sgemm;
};

struct OpenBlasApi {
  decltype(&::cblas_sgemm) sgemm;
  decltype(&::cblas_sgemv) sgemv;
  decltype(&::openblas_get_num_threads) get_num_threads;
  decltype(&::openblas_set_num_threads) set_num_threads;
};

// The tables, loading the library on first use, thread-safe; throw kUnavailable naming the library when it cannot
// be loaded. The library files are those CMake found (the OpenMP build of OpenBLAS, which shares steno's OpenMP
// team); where that file is absent (a binary carried to another machine) the loader's search finds the soname.
const OneDnnApi& onednn();
const OpenBlasApi& openblas();

}  // namespace steno::ops::cpu
