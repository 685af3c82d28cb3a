// WAV decoding in detail: bit-exact int16 scaling, channel averaging, resampling that keeps the frequency, and
// float input handling.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

using testing::make_wav_f32;
using testing::make_wav_i16;

TEST(DecodeWav, Int16At16kMonoIsBitExact) {
  // Every int16 value, including both extremes, then noise: each must come out as exactly x / 32768 (NeMo's
  // scaling), with no resampling and no clamping.
  std::vector<int16_t> pcm;
  for (int v = -32768; v <= 32767; ++v) pcm.push_back(static_cast<int16_t>(v));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-32768, 32767);
  for (int i = 0; i < 16000; ++i) pcm.push_back(static_cast<int16_t>(dist(rng)));

  const DecodedAudio a = decode_audio(make_wav_i16({.channels = 1, .sample_rate = 16000}, pcm));
  ASSERT_EQ(a.samples.size(), pcm.size());
  EXPECT_EQ(a.sample_rate, 16000);
  EXPECT_EQ(a.sample_rate_in, 16000);
  EXPECT_EQ(a.channels_in, 1);
  EXPECT_EQ(a.format, "wav/pcm_16");
  size_t mismatches = 0;
  for (size_t i = 0; i < pcm.size(); ++i) mismatches += a.samples[i] != static_cast<float>(pcm[i]) / 32768.0f;
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(a.samples.front(), -1.0f);
  EXPECT_EQ(a.samples[65535], 32767.0f / 32768.0f);
}

TEST(DecodeWav, StereoAt16kIsTheExactChannelAverage) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> dist(-32768, 32767);
  std::vector<int16_t> pcm(2 * 8000);
  for (auto& s : pcm) s = static_cast<int16_t>(dist(rng));
  const DecodedAudio a = decode_audio(make_wav_i16({.channels = 2, .sample_rate = 16000}, pcm));
  ASSERT_EQ(a.samples.size(), 8000u);
  EXPECT_EQ(a.channels_in, 2);
  for (size_t f = 0; f < 8000; ++f)
    ASSERT_EQ(a.samples[f], (static_cast<float>(pcm[2 * f]) + static_cast<float>(pcm[2 * f + 1])) / 65536.0f) << f;
}

TEST(DecodeWav, OppositeChannelsCancel) {
  // Averaging, not "take the left channel": L = tone, R = -tone gives silence.
  const auto pcm = testing::tone_i16(440, 1.0, 16000, 2, 0.5, /*invert_second_channel=*/true);
  const DecodedAudio a = decode_audio(make_wav_i16({.channels = 2, .sample_rate = 16000}, pcm));
  EXPECT_EQ(testing::rms(a.samples.data(), a.samples.size()), 0.0);
}

TEST(DecodeWav, Stereo44kTo16kKeepsLengthAndFrequency) {
  const auto pcm = testing::tone_i16(440, 3.0, 44100, 2, 0.5);
  const DecodedAudio a = decode_audio(make_wav_i16({.channels = 2, .sample_rate = 44100}, pcm));
  EXPECT_EQ(a.sample_rate, 16000);
  EXPECT_EQ(a.sample_rate_in, 44100);
  EXPECT_EQ(a.channels_in, 2);
  ASSERT_EQ(a.samples.size(), 48000u);  // 132300 * 16000 / 44100
  EXPECT_DOUBLE_EQ(a.duration_s(), 3.0);
  // 440 Hz for 3 s crosses zero 2 * 440 * 3 = 2640 times.
  EXPECT_NEAR(static_cast<double>(testing::zero_crossings(a.samples.data(), a.samples.size())), 2640.0, 3.0);
  EXPECT_GT(testing::tone_power_fraction(a.samples.data() + 8000, 32000, 440, 16000), 0.99);
}

TEST(DecodeWav, Mono8kUpsamplesTo16k) {
  const auto pcm = testing::tone_i16(1000, 1.0, 8000, 1, 0.5);
  const DecodedAudio a = decode_audio(make_wav_i16({.channels = 1, .sample_rate = 8000}, pcm));
  ASSERT_EQ(a.samples.size(), 16000u);
  EXPECT_NEAR(static_cast<double>(testing::zero_crossings(a.samples.data(), a.samples.size())), 2000.0, 3.0);
}

TEST(DecodeWav, FloatSamplesAreClampedToUnitRange) {
  const std::vector<float> x = {0.25f, -0.5f, 3.0f, -7.0f, 1.0f, -1.0f};
  const DecodedAudio a = decode_audio(make_wav_f32({.channels = 1, .sample_rate = 16000}, x));
  EXPECT_EQ(a.format, "wav/float");
  EXPECT_EQ(a.samples, (std::vector<float>{0.25f, -0.5f, 1.0f, -1.0f, 1.0f, -1.0f}));
}

// Found by fuzzing: finite float samples near the type's limit summed over channels or run through the resampler's
// filter overflowed to infinities and came out as NaN. They are clipped before either now.
TEST(DecodeWav, HugeFiniteFloatSamplesStayFiniteThroughMixingAndResampling) {
  for (const int channels : {1, 2}) {
    std::vector<float> x(static_cast<size_t>(800 * channels));
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 3 == 0 ? -3.0e38f : 2.5e38f);
    const DecodedAudio a = decode_audio(make_wav_f32({.channels = channels, .sample_rate = 8000}, x));
    ASSERT_EQ(a.samples.size(), 1600u);
    for (const float v : a.samples) ASSERT_TRUE(v >= -1.0f && v <= 1.0f) << v << " with " << channels << " channels";
  }
}

TEST(DecodeWav, NanOrInfiniteFloatSamplesAreRejected) {
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    std::vector<float> x(3200, 0.1f);
    x[1601] = bad;
    try {
      decode_audio(make_wav_f32({.channels = 2, .sample_rate = 16000}, x));
      ADD_FAILURE() << "decoded a file with " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
      EXPECT_NE(std::string(e.what()).find("sample 800 (channel 1, at 0.050 s) is"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::isnan(bad) ? "NaN" : "infinite"), std::string::npos) << e.what();
    }
  }
}

TEST(DecodeWav, ExtraChunksAndLyingRiffSizeAreTolerated) {
  // Only the data chunk's size matters; a RIFF size that is too big (common with streaming writers) is harmless.
  const auto pcm = testing::tone_i16(440, 0.5, 16000, 1, 0.5);
  const DecodedAudio a =
      decode_audio(make_wav_i16({.channels = 1, .sample_rate = 16000, .riff_size = 0xFFFFFFFF}, pcm));
  EXPECT_EQ(a.samples.size(), pcm.size());
  EXPECT_TRUE(a.warnings.empty());
}

// RF64 (EBU Tech 3306): the RIFF and data sizes are 0xFFFFFFFF and the real ones sit in a 'ds64' chunk.
std::vector<uint8_t> make_rf64(const std::vector<int16_t>& pcm, uint64_t ds64_data_size) {
  std::vector<uint8_t> b;
  auto u16 = [&](uint64_t v) {
    b.push_back(static_cast<uint8_t>(v & 0xFF));
    b.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
  };
  auto u32 = [&](uint64_t v) {
    u16(v & 0xFFFF);
    u16((v >> 16) & 0xFFFF);
  };
  auto u64 = [&](uint64_t v) {
    u32(v & 0xFFFFFFFF);
    u32(v >> 32);
  };
  auto id = [&](const char* s) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(s[i]));
  };
  id("RF64"), u32(0xFFFFFFFF), id("WAVE");
  id("ds64"), u32(28), u64(0), u64(ds64_data_size), u64(pcm.size()), u32(0);  // riff, data, sample count, table
  id("fmt "), u32(16), u16(1), u16(1), u32(16000), u32(32000), u16(2), u16(16);
  id("data"), u32(0xFFFFFFFF);
  for (const int16_t s : pcm) u16(static_cast<uint16_t>(s));
  return b;
}

TEST(DecodeWav, Rf64) {
  const auto pcm = testing::tone_i16(440, 0.5, 16000, 1, 0.5);
  const DecodedAudio a = decode_audio(make_rf64(pcm, 2 * pcm.size()));
  EXPECT_EQ(a.format, "rf64/pcm_16");
  ASSERT_EQ(a.samples.size(), pcm.size());
  EXPECT_EQ(a.samples[100], static_cast<float>(pcm[100]) / 32768.0f);
  EXPECT_TRUE(a.warnings.empty());
  // A ds64 data size over the file: decoded as far as it goes.
  const DecodedAudio cut = decode_audio(make_rf64(pcm, 2 * pcm.size() + 2000));
  EXPECT_EQ(cut.samples, a.samples);
  ASSERT_EQ(cut.warnings.size(), 1u);
  EXPECT_EQ(cut.warnings[0], "truncated: the WAV header says 9000 frames (0.56 s), the file holds 8000 (0.50 s); "
                             "transcribed the 0.50 s present");
}

}  // namespace
}  // namespace steno::audio
