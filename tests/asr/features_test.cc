// The CPU front end's normalisation settings. The numbers themselves are proven against NeMo in the engine's
// golden tests; here: without normalisation (Sortformer v2's "NA") the output is the log-mel that per-feature
// normalisation starts from.
#include "steno/asr/features.h"

#include <gtest/gtest.h>

#include <cmath>

#include "steno/core/error.h"

namespace steno::asr {
namespace {

PreprocessorConfig config(const std::string& normalize) {
  PreprocessorConfig c;
  c.features = 80;
  c.n_fft = 512;
  c.window_size = 0.025;
  c.highfreq = 8000;
  c.normalize = normalize;
  return c;
}

std::vector<float> chirp(int n) {
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = 0.3f * std::sin(0.0005f * i * i / 16.0f) + 0.01f * std::sin(0.37f * i);
  return x;
}

TEST(FeatureNormalisation, NoneIsTheLogMelThatPerFeatureNormalises) {
  ops::Context ctx = ops::Context::cpu(1);
  const std::vector<float> a = chirp(16000), b = chirp(9000);
  const std::vector<std::span<const float>> clips = {a, b};
  const Features raw = FeatureExtractor(config("none"), Tensor(), Tensor()).compute(ctx, clips);
  const Features norm = FeatureExtractor(config("per_feature"), Tensor(), Tensor()).compute(ctx, clips);
  ASSERT_EQ(raw.lengths, norm.lengths);
  const int64_t frames = raw.values.dim(1), mels = raw.values.dim(2);
  for (int64_t c = 0; c < 2; ++c) {
    const float* r = raw.values.data<float>() + c * frames * mels;
    const float* n = norm.values.data<float>() + c * frames * mels;
    const int64_t len = raw.lengths[c];
    double worst = 0;
    for (int64_t f = 0; f < mels; ++f) {
      double sum = 0, sq = 0;
      for (int64_t t = 0; t < len; ++t) sum += r[t * mels + f];
      const double mean = sum / len;
      for (int64_t t = 0; t < len; ++t) sq += (r[t * mels + f] - mean) * (r[t * mels + f] - mean);
      const double sd = std::sqrt(sq / (len - 1)) + 1e-5;
      for (int64_t t = 0; t < len; ++t) worst = std::max(worst, std::abs((r[t * mels + f] - mean) / sd - n[t * mels + f]));
    }
    EXPECT_LT(worst, 1e-4) << "clip " << c;
    for (int64_t i = len * mels; i < frames * mels; ++i) ASSERT_EQ(r[i], 0.0f) << "padding of clip " << c;
  }
  EXPECT_LT(raw.values.data<float>()[0], -1.0f);  // a log-mel, not a normalised one: nothing pulls it to zero mean
}

TEST(FeatureNormalisation, OtherSettingsAreRefusedByName) {
  try {
    FeatureExtractor(config("all_features"), Tensor(), Tensor());
    FAIL() << "all_features accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(std::string(e.what()).find("preprocessor.normalize"), std::string::npos);
  }
}

}  // namespace
}  // namespace steno::asr
