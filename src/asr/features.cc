#include "steno/asr/features.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "steno/ops/gemm.h"

namespace steno::asr {
namespace {

// Slaney mel scale (librosa's default, htk=False): linear below 1 kHz, logarithmic above.
double hz_to_mel(double hz) {
  constexpr double f_sp = 200.0 / 3, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp;
  const double logstep = std::log(6.4) / 27.0;
  return hz >= min_log_hz ? min_log_mel + std::log(hz / min_log_hz) / logstep : hz / f_sp;
}

double mel_to_hz(double mel) {
  constexpr double f_sp = 200.0 / 3, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp;
  const double logstep = std::log(6.4) / 27.0;
  return mel >= min_log_mel ? min_log_hz * std::exp(logstep * (mel - min_log_mel)) : f_sp * mel;
}

}  // namespace

Tensor slaney_mel_filterbank(int sample_rate, int n_fft, int n_mels, float fmin, float fmax) {
  STENO_CHECK(n_mels > 0 && n_fft > 0 && fmax > fmin, "bad mel filterbank parameters");
  const int bins = n_fft / 2 + 1;
  std::vector<double> mel_f(n_mels + 2);
  const double mel_lo = hz_to_mel(fmin), mel_hi = hz_to_mel(fmax);
  for (int i = 0; i < n_mels + 2; ++i) mel_f[i] = mel_to_hz(mel_lo + (mel_hi - mel_lo) * i / (n_mels + 1));
  Tensor fb = Tensor::zeros({n_mels, bins});
  float* w = fb.data<float>();
  for (int m = 0; m < n_mels; ++m) {
    const double lower_hz = mel_f[m], center_hz = mel_f[m + 1], upper_hz = mel_f[m + 2];
    const double enorm = 2.0 / (upper_hz - lower_hz);  // Slaney area normalisation
    for (int k = 0; k < bins; ++k) {
      const double f = static_cast<double>(k) * sample_rate / n_fft;
      const double rise = (f - lower_hz) / (center_hz - lower_hz);
      const double fall = (upper_hz - f) / (upper_hz - center_hz);
      w[m * bins + k] = static_cast<float>(std::max(0.0, std::min(rise, fall)) * enorm);
    }
  }
  return fb;
}

Tensor symmetric_hann_window(int length) {
  Tensor w = Tensor::empty({length});
  float* p = w.data<float>();
  for (int n = 0; n < length; ++n)
    p[n] = length == 1 ? 1.0f
                       : static_cast<float>(0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * n / (length - 1)));
  return w;
}

FeatureExtractor::FeatureExtractor(const PreprocessorConfig& config, Tensor filterbank, Tensor window)
    : config_(config),
      win_length_(config.win_length()),
      hop_length_(config.hop_length()),
      n_mels_(config.features),
      v25_(config.frontend_version == FrontendVersion::kNeMo25) {
  if (config.window != "hann")
    fail(ErrorCode::kUnimplemented, "preprocessor.window '{}': steno implements hann only", config.window);
  if (config.normalize != "per_feature" && config.normalize != "none")
    fail(ErrorCode::kUnimplemented, "preprocessor.normalize '{}': steno implements per_feature and none only",
         config.normalize);
  if (config.mag_power != 2.0)
    fail(ErrorCode::kUnimplemented, "preprocessor.mag_power {}: steno implements 2.0 only", config.mag_power);
  const int bins = config.n_fft / 2 + 1;
  STENO_CHECK(win_length_ > 0 && win_length_ <= config.n_fft && hop_length_ > 0,
              "front end: window {} / hop {} / n_fft {} are inconsistent", win_length_, hop_length_, config.n_fft);
  if (!filterbank.defined())
    filterbank = slaney_mel_filterbank(config.sample_rate, config.n_fft, n_mels_, static_cast<float>(config.lowfreq),
                                       static_cast<float>(config.highfreq));
  filterbank = filterbank.to(DType::kF32).reshape({-1, bins});
  STENO_CHECK(filterbank.dim(0) == n_mels_, "front end: filterbank has {} mels, config says {}", filterbank.dim(0),
              n_mels_);
  if (!window.defined()) window = symmetric_hann_window(win_length_);
  window = window.to(DType::kF32);
  STENO_CHECK(window.numel() == win_length_, "front end: window has {} samples, config says {}", window.numel(),
              win_length_);

  filterbank_t_ = Tensor::empty({bins, n_mels_});
  const float* fb = filterbank.data<float>();
  for (int m = 0; m < n_mels_; ++m)
    for (int k = 0; k < bins; ++k) filterbank_t_.data<float>()[k * n_mels_ + m] = fb[m * bins + k];

  // torch.stft centres the win_length window inside n_fft samples; sample n of the window sits at n + offset.
  const int offset = (config.n_fft - win_length_) / 2;
  dft_basis_ = Tensor::empty({win_length_, 2 * bins});
  float* basis = dft_basis_.data<float>();
  const float* w = window.data<float>();
  for (int n = 0; n < win_length_; ++n) {
    for (int k = 0; k < bins; ++k) {
      // Reduce k*(n+offset) modulo n_fft in integers so the angle stays exact for every bin.
      const int phase = static_cast<int>((static_cast<int64_t>(k) * (n + offset)) % config.n_fft);
      const double angle = 2.0 * std::numbers::pi * phase / config.n_fft;
      basis[n * 2 * bins + k] = static_cast<float>(w[n] * std::cos(angle));
      basis[n * 2 * bins + bins + k] = static_cast<float>(-w[n] * std::sin(angle));
    }
  }
}

int64_t FeatureExtractor::valid_frames(int64_t samples) const {
  return samples / hop_length_ + (v25_ ? 0 : 1);
}

namespace {
constexpr int64_t kSpectrumBlockFrames = 16384;  // 164 s at a 10 ms hop
}  // namespace

Features FeatureExtractor::compute(ops::Context& ctx, const std::vector<std::span<const float>>& clips) const {
  const int bins = config_.n_fft / 2 + 1, n_mels = n_mels_, pad = config_.n_fft / 2;
  const int win = win_length_, hop = hop_length_, offset = (config_.n_fft - win) / 2;
  const float preemph = static_cast<float>(config_.preemph);
  const float guard = static_cast<float>(config_.log_zero_guard_value);
  int64_t max_len = 0;
  for (const auto& c : clips) max_len = std::max<int64_t>(max_len, static_cast<int64_t>(c.size()));

  Features out;
  int64_t max_frames = 0;
  for (const auto& c : clips) {
    out.lengths.push_back(valid_frames(static_cast<int64_t>(c.size())));
    max_frames = std::max(max_frames, out.lengths.back());
  }
  const int64_t batch = static_cast<int64_t>(clips.size());
  out.values = Tensor::zeros({batch, max_frames, n_mels});

  for (int64_t b = 0; b < batch; ++b) {
    const auto& x = clips[b];
    const int64_t len = static_cast<int64_t>(x.size()), frames = out.lengths[b];
    if (frames == 0) continue;
    if (!v25_)
      STENO_CHECK(max_len > pad, "front end 2.4: clips need more than {} samples for reflect padding", pad);

    // Pre-emphasis over the batch-padded signal, then centre padding (zeros in 2.5, reflect in 2.4), computed per
    // block of frames below rather than as a copy of the whole clip (230 MB for an hour).
    const int64_t emph_end = v25_ ? len : max_len;
    auto emphasised = [&](int64_t n) {  // y[n], 0 <= n < max_len
      if (n >= emph_end) return 0.0f;
      const float cur = n < len ? x[n] : 0.0f;
      const float prev = n == 0 ? 0.0f : (n - 1 < len ? x[n - 1] : 0.0f);
      return n == 0 ? cur : cur - preemph * prev;
    };
    auto padded_at = [&](int64_t i) {  // the padded signal at i, y[i - pad]
      const int64_t n = i - pad;
      if (n >= 0 && n < max_len) return emphasised(n);
      if (v25_) return 0.0f;
      return emphasised(n < 0 ? -n : 2 * (max_len - 1) - n);  // y[-i] = y[i], y[max_len-1+i] = y[max_len-1-i]
    };
    std::vector<float> padded;  // the padded signal from sample first_sample on, for one block of frames

    // Power spectrum of the valid frames as GEMMs against the windowed DFT basis, then the mel filterbank, in
    // blocks of frames: the spectrum of an hour (360,000 frames x 514 values) would take 740 MB at once, a block
    // takes 34 MB. Clips up to one block (164 s) are computed exactly as in one piece.
    Tensor mel = out.values.narrow0(b, b + 1).reshape({max_frames, n_mels}).narrow0(0, frames);
    for (int64_t t0 = 0; t0 < frames; t0 += kSpectrumBlockFrames) {
      const int64_t n = std::min(kSpectrumBlockFrames, frames - t0);
      const int64_t first_sample = t0 * hop + offset;
      padded.resize(static_cast<size_t>((n - 1) * hop + win));
      for (size_t i = 0; i < padded.size(); ++i) padded[i] = padded_at(first_sample + static_cast<int64_t>(i));
      Tensor frame_mat = ctx.scratch({n, win});
      float* fm = frame_mat.data<float>();
      for (int64_t t = 0; t < n; ++t) std::copy_n(padded.data() + t * hop, win, fm + t * win);
      Tensor spec = ctx.scratch({n, 2 * bins});
      ops::gemm(ctx, frame_mat, false, dft_basis_, false, spec);
      Tensor power = ctx.scratch({n, bins});
      const float* s = spec.data<float>();
      float* p = power.data<float>();
      for (int64_t t = 0; t < n; ++t) {
        for (int k = 0; k < bins; ++k) {
          const float re = s[t * 2 * bins + k], im = s[t * 2 * bins + bins + k];
          const float mag = std::sqrt(re * re + im * im);  // NeMo: |X|, then ^mag_power (2.0)
          p[t * bins + k] = mag * mag;
        }
      }
      Tensor block = mel.narrow0(t0, t0 + n);
      ops::gemm(ctx, power, false, filterbank_t_, false, block);
    }

    // log(mel + guard), then per-feature normalisation over the valid frames (unbiased std, + 1e-5 on the std)
    // unless the model has none (NeMo's "NA", as Sortformer v2).
    float* m = mel.data<float>();
    for (int64_t i = 0; i < frames * n_mels; ++i) m[i] = std::log(m[i] + guard);
    for (int f = 0; f < n_mels && config_.normalize == "per_feature"; ++f) {
      double sum = 0;
      for (int64_t t = 0; t < frames; ++t) sum += m[t * n_mels + f];
      const double mean = sum / frames;
      double sq = 0;
      for (int64_t t = 0; t < frames; ++t) sq += (m[t * n_mels + f] - mean) * (m[t * n_mels + f] - mean);
      const double std = (frames > 1 ? std::sqrt(sq / (frames - 1)) : 0.0) + 1e-5;
      const float fmean = static_cast<float>(mean), fstd = static_cast<float>(std);
      for (int64_t t = 0; t < frames; ++t) m[t * n_mels + f] = (m[t * n_mels + f] - fmean) / fstd;
    }
  }
  return out;
}

}  // namespace steno::asr
