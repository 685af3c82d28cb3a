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
  std::string gemm = "onednn";
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
};

// Validates the options (a bad device or dtype throws kInvalidArgument naming the option) and makes the context.
Compute make_compute(const ComputeOptions& opt);

}  // namespace steno::cli
