#include "cuda_features.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "audio_upload.h"
#include "features_kernels.h"
#include "steno/core/cuda.h"
#include "steno/ops/copy.h"
#include "steno/ops/gemm.h"

namespace steno::asr {
namespace {

cudaStream_t stream_of(const ops::Context& ctx) { return static_cast<cudaStream_t>(ctx.stream().handle()); }

// Samples per piece of an overlapped upload, about: 4 Mi samples (16 MB, ~0.4 ms of PCIe 5) keeps each piece's
// kernels long enough to hide the next piece's copy, and batches up to ~8 x 45 s in one piece (no second stream).
constexpr int64_t kPieceSamples = int64_t{4} << 20;
constexpr size_t kMaxPieces = 4;

// Where the batch (`total` samples) is cut into pieces whose upload overlaps the kernels of the ones before: about
// equal shares of the samples, at clip boundaries, at most kMaxPieces; one piece when `overlap` is off or the
// batch is small.
std::vector<size_t> upload_pieces(const std::vector<std::span<const float>>& clips, int64_t total, bool overlap) {
  const auto pieces = static_cast<size_t>(std::clamp<int64_t>(total / kPieceSamples, 1, kMaxPieces));
  std::vector<size_t> cuts;
  if (overlap && pieces > 1) {
    int64_t sum = 0;
    for (size_t i = 0; i < clips.size() && cuts.size() + 1 < pieces; ++i) {
      sum += static_cast<int64_t>(clips[i].size());
      if (sum * static_cast<int64_t>(pieces) >= total * static_cast<int64_t>(cuts.size() + 1)) cuts.push_back(i + 1);
    }
  }
  if (cuts.empty() || cuts.back() != clips.size()) cuts.push_back(clips.size());
  return cuts;
}

}  // namespace

CudaFeatureExtractor::CudaFeatureExtractor(const FeatureExtractor& reference, ops::Context& upload)
    : reference_(reference) {
  STENO_CHECK(!upload.device().is_cpu(), "CudaFeatureExtractor needs a CUDA context");
  auto& alloc = steno::cuda::weight_allocator(upload.device().index);
  dft_basis_ = ops::place(upload, reference.dft_basis(), DType::kF32, alloc);
  filterbank_t_ = ops::place(upload, reference.filterbank_t(), DType::kF32, alloc);
  if (const char* v = std::getenv("STENO_FEATURES_OVERLAP")) {
    const std::string s = v;
    STENO_CHECK(s == "0" || s == "1", "STENO_FEATURES_OVERLAP must be 0 or 1, got '{}'", s);
    overlap_upload_ = s == "1";
  }
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
  steno::cuda::memcpy_async(dev_table.raw(), table.data(), table.size() * sizeof(int64_t), stream);
  const int64_t* t = static_cast<const int64_t*>(dev_table.raw());
  const cuda_features::ClipTable clip_table{t, t + batch, t + 2 * batch};
  Tensor gain;  // lives until the framing kernels are queued (scratch memory is freed in stream order)
  if (peak_eps) {
    gain = ctx.scratch({batch});
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
  Tensor spec = ctx.scratch({rows, 2 * bins});
  Tensor power = ctx.scratch({rows, bins});
  Tensor mel = out.values.reshape({rows, n_mels});
  // Clips [c0, c1): their rows of every matrix, from their own samples (the clip table read from c0 on).
  auto features_of = [&](int64_t c0, int64_t c1) {
    if (c1 == c0) return;
    cuda_features::ClipTable piece{clip_table.start + c0, clip_table.length + c0, clip_table.frames + c0};
    if (peak_eps) {
      cuda_features::launch_peak_gains(audio.data<float>(), piece, c1 - c0, *peak_eps, gain.data<float>() + c0,
                                       stream_of(ctx));
      ops::cuda::check_launch("front end: peak normalisation");
      piece.gain = gain.data<float>() + c0;
    }
    const int64_t r0 = c0 * max_frames, r1 = c1 * max_frames;
    cuda_features::launch_frames(audio.data<float>(), piece, c1 - c0, max_frames, p,
                                 frames.data<float>() + r0 * win, stream_of(ctx));
    ops::cuda::check_launch("front end: framing");
    Tensor piece_spec = spec.narrow0(r0, r1);
    ops::gemm(ctx, frames.narrow0(r0, r1), false, dft_basis_, false, piece_spec);
    cuda_features::launch_power(piece_spec.data<float>(), r1 - r0, bins, power.data<float>() + r0 * bins,
                                stream_of(ctx));
    ops::cuda::check_launch("front end: power");
    Tensor piece_mel = mel.narrow0(r0, r1);
    ops::gemm(ctx, power.narrow0(r0, r1), false, filterbank_t_, false, piece_mel);
  };
  const std::vector<size_t> cuts = upload_pieces(clips, total, overlap_upload_);
  if (cuts.size() == 1) {  // one piece: everything on ctx's stream, the kernels after the whole upload
    upload_clips(ctx, clips, audio.data<float>());
    features_of(0, batch);
  } else {
    upload_clips_in_pieces(ctx, clips, audio.data<float>(), cuts, [&](size_t k) {
      features_of(k == 0 ? 0 : static_cast<int64_t>(cuts[k - 1]), static_cast<int64_t>(cuts[k]));
    });
  }
  cuda_features::launch_log_normalize(out.values.data<float>(), clip_table.frames, batch, max_frames, n_mels,
                                      static_cast<float>(cfg.log_zero_guard_value), cfg.normalize == "per_feature",
                                      stream_of(ctx));
  ops::cuda::check_launch("front end: log and normalisation");
  return out;
}

}  // namespace steno::asr
