#include "compute_options.h"

#include "steno/core/error.h"

namespace steno::cli {

void add_compute_options(CLI::App* cmd, ComputeOptions& opt) {
  cmd->add_option("--device", opt.device, "cpu, cuda or cuda:N (a build with the CUDA backend)");
  cmd->add_option("--dtype", opt.dtype,
                  "Compute dtype: fp32 (the CPU's), fp16 or bf16 (CUDA; default bf16), or fp8 (bf16 with the "
                  "encoder's linear layers in FP8; compute capability 8.9+)");
  cmd->add_option("-t,--threads", opt.threads, "CPU threads (default: all cores, or $STENO_NUM_THREADS)");
  cmd->add_option("--gemm", opt.gemm,
                  "CPU GEMM library: onednn, openblas, or auto (default: OpenBLAS for under 12 s of audio, where "
                  "oneDNN's start-up kernel generation costs more than its faster kernels save)");
}

Compute make_compute(const ComputeOptions& opt) {
  const Device device = parse_device(opt.device);
  const bool fp8 = opt.dtype == "fp8";
  const DType dtype = fp8 ? DType::kBF16
                      : opt.dtype.empty() ? (device.is_cpu() ? DType::kF32 : DType::kBF16)
                                          : parse_dtype(opt.dtype);
  STENO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16,
              "--dtype must be fp32, fp16, bf16 or fp8, got '{}'", opt.dtype);
  STENO_CHECK(!device.is_cpu() || dtype == DType::kF32, "--dtype {}: the CPU engine computes in fp32", opt.dtype);
  if (!device.is_cpu()) return {device, dtype, fp8, ops::Context::cuda(device.index), nullptr};
  if (opt.gemm == "auto")  // no warm-up yet: choose_gemm() starts oneDNN's when the audio's length asks for it
    return {device, dtype, false, ops::Context::cpu(opt.threads, ops::GemmBackend::kOpenBlas), nullptr, true};
  const ops::GemmBackend gemm = ops::parse_gemm_backend(opt.gemm);
  return {device, dtype, false, ops::Context::cpu(opt.threads, gemm), std::make_unique<ops::CpuGemmWarmUp>(gemm)};
}

void choose_gemm(Compute& compute, double audio_seconds) {
  if (!compute.gemm_auto || audio_seconds < kOneDnnFromAudioSeconds) return;
  compute.ctx.set_gemm_backend(ops::GemmBackend::kOneDnn);
  compute.gemm_warm_up = std::make_unique<ops::CpuGemmWarmUp>(ops::GemmBackend::kOneDnn);
}

const char* gemm_name(const Compute& compute) {
  return compute.device.is_cpu() ? ops::gemm_backend_name(compute.ctx.gemm_backend()) : "cublaslt";
}

}  // namespace steno::cli
