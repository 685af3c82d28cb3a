#include "cuda_features.h"

#include <algorithm>

#include "audio_upload.h"
#include "features_kernels.h"
#include "steno/core/cuda.h"
#include "steno/ops/copy.h"
#include "steno/ops/gemm.h"

namespace steno::asr {
namespace {

cudaStream_t stream_of(const ops::Context& ctx) { return static_cast<cudaStream_t>(ctx.stream().handle()); }

}  // namespace

CudaFeatureExtractor::CudaFeatureExtractor(const FeatureExtractor& reference, ops::Context& upload)
    : reference_(reference) {
  STENO_CHECK(!upload.device().is_cpu(), "CudaFeatureExtractor needs a CUDA context");
  auto& alloc = steno::cuda::weight_allocator(upload.device().index);
  dft_basis_ = ops::place(upload, reference.dft_basis(), DType::kF32, alloc);
  filterbank_t_ = ops::place(upload, reference.filterbank_t(), DType::kF32, alloc);
}

Features CudaFeatureExtractor::compute(ops::Context& ctx, const std::vector<std::span<const float>>& clips,
                                       std::optional<float> peak_eps, Tensor* gains) const {
  STENO_CHECK(ctx.device() == dft_basis_.device(), "CUDA front end: its constants are on {}, the context on {}",
              dft_basis_.device().str(), ctx.device().str());
  const PreprocessorConfig& cfg = reference_.config();
  const int bins = cfg.n_fft / 2 + 1, n_mels = cfg.features, win = reference_.win_length();
  const int64_t batch = static_cast<int64_t>(clips.size());

  // The clip table: start (in the packed audio), length, valid frames; [3, batch] int64.
  std::vector<int64_t> table(static_cast<size_t>(3 * batch));
  int64_t total = 0, max_len = 0, max_frames = 0;
  Features out;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = static_cast<int64_t>(clips[b].size());
    table[b] = total;
    table[batch + b] = len;
    table[2 * batch + b] = reference_.valid_frames(len);
    out.lengths.push_back(table[2 * batch + b]);
    total += len;
    max_len = std::max(max_len, len);
    max_frames = std::max(max_frames, out.lengths.back());
  }
  if (!reference_.nemo25())
    STENO_CHECK(max_len > cfg.n_fft / 2, "front end 2.4: clips need more than {} samples for reflect padding",
                cfg.n_fft / 2);
  out.values = ctx.scratch({batch, max_frames, n_mels});
  if (batch == 0 || max_frames == 0) return out;

  Tensor audio = ctx.scratch({std::max<int64_t>(total, 1)});
  Tensor dev_table = ctx.scratch({3 * batch}, DType::kI64);
  const steno::cuda::Stream& stream = ctx.stream();
  upload_clips(ctx, clips, audio.data<float>());
  steno::cuda::memcpy_async(dev_table.raw(), table.data(), table.size() * sizeof(int64_t), stream);

  const int64_t* t = static_cast<const int64_t*>(dev_table.raw());
  cuda_features::ClipTable clip_table{t, t + batch, t + 2 * batch};
  Tensor gain;  // lives until the framing kernel is queued (scratch memory is freed in stream order)
  if (peak_eps) {
    gain = ctx.scratch({batch});
    cuda_features::launch_peak_gains(audio.data<float>(), clip_table, batch, *peak_eps, gain.data<float>(),
                                     stream_of(ctx));
    ops::cuda::check_launch("front end: peak normalisation");
    clip_table.gain = gain.data<float>();
    if (gains != nullptr) *gains = gain;
  }
  cuda_features::FrameParams p;
  p.win = win;
  p.hop = reference_.hop_length();
  p.offset = (cfg.n_fft - win) / 2;
  p.pad = cfg.n_fft / 2;
  p.max_len = max_len;
  p.preemph = static_cast<float>(cfg.preemph);
  p.nemo25 = reference_.nemo25();

  const int64_t rows = batch * max_frames;
  Tensor frames = ctx.scratch({rows, win});
  cuda_features::launch_frames(audio.data<float>(), clip_table, batch, max_frames, p, frames.data<float>(),
                               stream_of(ctx));
  ops::cuda::check_launch("front end: framing");
  Tensor spec = ctx.scratch({rows, 2 * bins});
  ops::gemm(ctx, frames, false, dft_basis_, false, spec);
  Tensor power = ctx.scratch({rows, bins});
  cuda_features::launch_power(spec.data<float>(), rows, bins, power.data<float>(), stream_of(ctx));
  ops::cuda::check_launch("front end: power");
  Tensor mel = out.values.reshape({rows, n_mels});
  ops::gemm(ctx, power, false, filterbank_t_, false, mel);
  cuda_features::launch_log_normalize(out.values.data<float>(), clip_table.frames, batch, max_frames, n_mels,
                                      static_cast<float>(cfg.log_zero_guard_value), cfg.normalize == "per_feature",
                                      stream_of(ctx));
  ops::cuda::check_launch("front end: log and normalisation");
  return out;
}

}  // namespace steno::asr
