// The log-mel front end on a CUDA device, for batches: the same computation as FeatureExtractor::compute (the CPU
// reference, which it is tested against), with the windowed DFT basis and the mel filterbank placed on the device
// once and shared by every context there. Not built without CUDA; the header names no CUDA type.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "steno/asr/features.h"
#include "steno/ops/context.h"

namespace steno::asr {

class CudaFeatureExtractor {
 public:
  // Places `reference`'s constants on `upload`'s device (weight memory, shared by the device's contexts).
  CudaFeatureExtractor(const FeatureExtractor& reference, ops::Context& upload);

  // Features of a batch of 16 kHz mono clips (host memory): values [B, frames, n_mels] f32 on ctx's device,
  // queued on ctx's stream; lengths on the host. Same contract as FeatureExtractor::compute, including the
  // batch-dependent NeMo 2.4 variant. Returns once the audio has been copied out of `clips`.
  // `peak_eps`: each clip is first multiplied by 1 / (max(clip) + peak_eps), its signed maximum, in f32 on the
  // device (Sortformer's peak normalisation); `gains`, if given, receives those factors ([B] f32 on the device).
  // A batch of more than ~8 M samples (8 x 45 s) is uploaded in up to 4 pieces on a stream of their own, each
  // piece's kernels queued as soon as its audio has arrived, so that they run while the next piece is copied
  // (upload_clips_in_pieces); $STENO_FEATURES_OVERLAP=0 uploads it whole first (the benchmark's other arm).
  Features compute(ops::Context& ctx, const std::vector<std::span<const float>>& clips,
                   std::optional<float> peak_eps = std::nullopt, Tensor* gains = nullptr) const;

 private:
  const FeatureExtractor& reference_;
  bool overlap_upload_ = true;
  Tensor dft_basis_;     // [win_length, 2 * bins] on the device
  Tensor filterbank_t_;  // [bins, n_mels] on the device
};

}  // namespace steno::asr
