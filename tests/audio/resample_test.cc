#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "audio_fixtures.h"
#include "audio/resample.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

std::vector<float> sine(double freq, int rate, size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(0.5 * std::sin(2.0 * std::numbers::pi * freq * static_cast<double>(i) / rate));
  return x;
}

TEST(Resample, CommonRatesGiveTheExactLengthAndKeepTheTone) {
  for (const int rate : {8000, 11025, 22050, 24000, 32000, 44100, 48000, 96000}) {
    const std::vector<float> x = sine(440, rate, static_cast<size_t>(rate) * 2);
    const std::vector<float> y = resample(x, rate, 16000);
    EXPECT_EQ(y.size(), 32000u) << rate;
    EXPECT_NEAR(static_cast<double>(testing::zero_crossings(y.data(), y.size())), 1760.0, 3.0) << rate;
    EXPECT_GT(testing::tone_power_fraction(y.data() + 8000, 16000, 440, 16000), 0.999) << rate;
    EXPECT_NEAR(testing::rms(y.data() + 8000, 16000), 0.5 / std::sqrt(2.0), 1e-3) << rate;
  }
}

TEST(Resample, OddLengthsRound) {
  const std::vector<float> x = sine(440, 44100, 12345);
  EXPECT_NEAR(static_cast<double>(resample(x, 44100, 16000).size()), 12345.0 * 16000 / 44100, 1.0);
  EXPECT_TRUE(resample({}, 44100, 16000).empty());
}

TEST(Resample, RemovesContentAboveTheNewNyquist) {
  // A 12 kHz tone at 48 kHz cannot exist at 16 kHz (Nyquist 8 kHz): it must be filtered, not aliased to 4 kHz.
  const std::vector<float> y = resample(sine(12000, 48000, 96000), 48000, 16000);
  EXPECT_LT(testing::rms(y.data() + 4000, 24000), 1e-3);
}

TEST(Resample, SameRateIsAnExactCopy) {
  const std::vector<float> x = {0.1f, -0.2f, 0.3f};
  EXPECT_EQ(resample(x, 16000, 16000), x);
}

TEST(Resample, RejectsNonPositiveRates) {
  const std::vector<float> x(10);
  EXPECT_THROW(resample(x, 0, 16000), Error);
  EXPECT_THROW(resample(x, 16000, -1), Error);
}

TEST(ToMono, AveragesChannels) {
  EXPECT_EQ(to_mono(std::vector<float>{1.0f, 0.0f, 0.5f, -0.5f, -1.0f, -0.5f}, 2),
            (std::vector<float>{0.5f, 0.0f, -0.75f}));
  EXPECT_EQ(to_mono(std::vector<float>{0.25f, 0.5f, 0.75f}, 3), (std::vector<float>{0.5f}));
  EXPECT_EQ(to_mono(std::vector<float>{0.25f, 0.5f}, 1), (std::vector<float>{0.25f, 0.5f}));
}

TEST(ToMono, RejectsPartialFramesAndBadChannelCounts) {
  try {
    to_mono(std::vector<float>{1, 2, 3}, 2);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_THROW(to_mono(std::vector<float>{1, 2}, 0), Error);
}

}  // namespace
}  // namespace steno::audio
