// Where a command's model runs: the --device/--dtype/--threads/--gemm options the engine commands share, and
// the context they give.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "steno/core/device.h"
#include "steno/core/dtype.h"
#include "steno/ops/context.h"
#include "steno/ops/gemm.h"

namespace steno::cli {

struct ComputeOptions {
  std::string device = "cpu";
  std::string dtype;  // default: f32 on the CPU, bf16 on CUDA; fp8: bf16 with the encoder's linear layers in FP8
  std::string gemm = "auto";  // onednn, openblas, or auto: by the audio's length (choose_gemm)
  int threads = 0;
};

void add_compute_options(CLI::App* cmd, ComputeOptions& opt);

struct Compute {
  Device device;
  DType dtype;  // the activations' (bf16 under --dtype fp8)
  bool fp8_linears = false;  // --dtype fp8: the encoder's linear layers in FP8 (asr::ModelOverrides)
  ops::Context ctx;
  // On the CPU: oneDNN's kernels made on a thread of their own while the command loads its model (ops/gemm.h).
  std::unique_ptr<ops::CpuGemmWarmUp> gemm_warm_up;
  bool gemm_auto = false;  // --gemm auto on the CPU: ctx's library is OpenBLAS until choose_gemm() says otherwise
};

// Validates the options (a bad device or dtype throws kInvalidArgument naming the option) and makes the context.
Compute make_compute(const ComputeOptions& opt);

// Under --gemm auto, the GEMM library for a command about to run `audio_seconds` of audio, set on compute.ctx.
// A one-shot process pays oneDNN's kernel generation (36 ms at its first GEMM, more per new shape), which its
// faster kernels earn back only on longer audio; OpenBLAS has none. Measured whole process on this project's 2-core
// machine (bench/results/cpu-startup): the bundled model is faster with OpenBLAS up to ~11 s of audio (1 s: 169
// against 178 ms, 9 s: 233 / 241) and with oneDNN from there (20 s: 353 / 323, 60 s: 596 / 542); smaller models
// later (NeMo's tiny reference: ~45 s). oneDNN from kOneDnnFromAudioSeconds, its kernels then made on a thread of
// their own while the command loads its model (call this before the load). Nothing under an explicit --gemm or
// off the CPU.
inline constexpr double kOneDnnFromAudioSeconds = 12.0;
void choose_gemm(Compute& compute, double audio_seconds);

// The library compute.ctx's GEMMs run in, for a command's report: onednn, openblas, or cublaslt on a GPU.
const char* gemm_name(const Compute& compute);

}  // namespace steno::cli
