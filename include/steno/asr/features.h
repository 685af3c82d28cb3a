// NeMo-compatible log-mel front end (AudioToMelSpectrogramPreprocessor / FilterbankFeatures at inference),
// both variants (docs/engine.md, "Front end"): "2.5" (NeMo >= 2.5) and "2.4" (NeMo <= 2.4).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "steno/asr/model_config.h"
#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::asr {

struct Features {
  Tensor values;                // [B, frames, n_mels], time-major (the encoder's layout); zero past each length
  std::vector<int64_t> lengths;  // valid frames per clip
};

class FeatureExtractor {
 public:
  // `filterbank` [n_mels, n_fft/2+1] and `window` [win_length] come from the checkpoint when it has them
  // (NeMo stores both as buffers; using them is bit-faithful); undefined tensors mean "compute NeMo's defaults"
  // (librosa Slaney mel filterbank, symmetric Hann window).
  // Implements NeMo's inference defaults (Hann window, magnitude power 2, log, per-feature normalisation or none);
  // any other setting is refused with kUnimplemented naming the field.
  FeatureExtractor(const PreprocessorConfig& config, Tensor filterbank, Tensor window);

  const PreprocessorConfig& config() const { return config_; }
  // Valid frame count for a clip of `samples` samples.
  int64_t valid_frames(int64_t samples) const;

  // A batch of 16 kHz mono clips. Frames span the longest clip: as in NeMo, every clip is zero-padded to the
  // batch's longest length before the STFT. (In the 2.4 variant that padding is visible through the reflect
  // padding and the pre-emphasis tail: NeMo <= 2.4's output depends on the batch, and so does this.)
  Features compute(ops::Context& ctx, const std::vector<std::span<const float>>& clips) const;

  // The computation's constants, for the CUDA front end (src/asr/cuda/cuda_features.h).
  int win_length() const { return win_length_; }
  int hop_length() const { return hop_length_; }
  bool nemo25() const { return v25_; }
  const Tensor& dft_basis() const { return dft_basis_; }          // [win_length, 2 * (n_fft/2+1)]
  const Tensor& filterbank_t() const { return filterbank_t_; }    // [n_fft/2+1, n_mels]

 private:
  PreprocessorConfig config_;
  int win_length_, hop_length_, n_mels_;
  bool v25_;
  Tensor filterbank_t_;  // [n_fft/2+1, n_mels], transposed for a row-major GEMM
  Tensor dft_basis_;     // [win_length, 2 * (n_fft/2+1)]: window-weighted cos | -sin columns
};

// librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, htk=False, norm="slaney"): [n_mels, n_fft/2+1].
Tensor slaney_mel_filterbank(int sample_rate, int n_fft, int n_mels, float fmin, float fmax);
// torch.hann_window(length, periodic=False).
Tensor symmetric_hann_window(int length);

}  // namespace steno::asr
