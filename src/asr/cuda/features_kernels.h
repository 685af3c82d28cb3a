// Raw-pointer launchers for the CUDA front end's kernels (features_kernels.cu); cuda_features.cc does the checks,
// the uploads and the GEMMs around them. CUDA headers only (see src/ops/cuda/launch.h for why).
//
// The front end is the CPU FeatureExtractor's computation, batched: every valid frame of every clip becomes one
// row of a frame matrix, one GEMM against the windowed DFT basis gives the spectra, a second against the mel
// filterbank the mel energies, and one kernel takes the log and normalises each clip's features.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "launch.h"  // src/ops/cuda: check_launch

namespace steno::asr::cuda_features {

// Per-clip integers in device memory, `batch` elements each.
struct ClipTable {
  const int64_t* start;   // first sample of the clip in the packed audio
  const int64_t* length;  // samples
  const int64_t* frames;  // valid feature frames
  const float* gain = nullptr;  // per clip: every sample is multiplied by it first (f32); null: no gain
};

// The front end's framing settings (FeatureExtractor's config), passed by value.
struct FrameParams {
  int32_t win = 0;       // window length: the frame matrix's columns
  int32_t hop = 0;
  int32_t offset = 0;    // (n_fft - win) / 2: where torch.stft puts the window inside n_fft samples
  int32_t pad = 0;       // n_fft / 2: centre padding
  int64_t max_len = 0;   // the batch's longest clip (NeMo pads every clip to it before the STFT)
  float preemph = 0;
  bool nemo25 = true;    // zero centre padding, pre-emphasis within the clip; false: NeMo <= 2.4's reflect padding
};

// gains[b] = 1 / (max(clip b) + eps) in f32, the clip's signed maximum (Sortformer's peak normalisation, NeMo's
// process_signal); 1 for an empty clip. One block per clip.
void launch_peak_gains(const float* audio, ClipTable clips, int64_t batch, float eps, float* gains,
                       cudaStream_t stream);

// frames[b, t, n] (rows b * max_frames + t) = the (gained,) pre-emphasised, centre-padded signal of clip b at
// t * hop + offset + n - pad, for t < the clip's frames; zero rows past them.
void launch_frames(const float* audio, ClipTable clips, int64_t batch, int64_t max_frames, FrameParams p,
                   float* frames, cudaStream_t stream);

// power[r, k] = |spec[r, k] + i spec[r, bins + k]|^2 (magnitude, then squared, as NeMo's mag_power 2.0 does).
void launch_power(const float* spec, int64_t rows, int32_t bins, float* power, cudaStream_t stream);

// In place on mel [batch, max_frames, n_mels]: log(mel + guard), then (per_feature) per clip and mel channel
// subtract the mean and divide by the unbiased standard deviation + 1e-5 over the clip's valid frames; rows past
// them become zero.
void launch_log_normalize(float* mel, const int64_t* frames, int64_t batch, int64_t max_frames, int32_t n_mels,
                          float guard, bool per_feature, cudaStream_t stream);

}  // namespace steno::asr::cuda_features
