// estimate_duration_s: the duration from a file's first bytes and its size, as the HTTP server sees an upload
// arriving. Exact where the header states it, close where it must extrapolate, and never a crash or an exception
// on whatever bytes arrive.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"

namespace steno::audio {
namespace {

constexpr double kLongToneSeconds = 30.0;
constexpr size_t kPrefix = 64 * 1024;

static_assert(noexcept(estimate_duration_s(std::span<const uint8_t>(), 0)));

std::optional<DurationEstimate> estimate_prefix(const std::vector<uint8_t>& file, size_t n) {
  return estimate_duration_s(std::span<const uint8_t>(file.data(), std::min(n, file.size())), file.size());
}

// 30 s of a 44.1 kHz stereo tone in deterministic noise: encoders spend a steady bitrate on it, as on speech, so a
// prefix's bitrate is the file's.
std::vector<int16_t> long_noisy_tone() {
  std::vector<int16_t> pcm = testing::tone_i16(300, kLongToneSeconds, 44100, 2, 0.3);
  uint32_t state = 7;
  for (int16_t& s : pcm) {
    state = state * 1664525u + 1013904223u;
    s = static_cast<int16_t>(s + static_cast<int16_t>((state >> 16) % 8001) - 4000);
  }
  return pcm;
}

class EstimateDuration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    testing::write_bytes(dir_->file("n.wav"), testing::make_wav_i16({.channels = 2, .sample_rate = 44100},
                                                                    long_noisy_tone()));
    // n.mp3 has LAME's Info tag (a frame count); n_cbr.mp3 is bare constant-bitrate frames.
    errors_ = testing::encode_all(*dir_, "n") +
              testing::run_tool("lame", "lame --quiet -t -b 128 " + dir_->file("n.wav") + " " +
                                            dir_->file("n_cbr.mp3") + " >/dev/null 2>&1");
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::vector<uint8_t> bytes(const std::string& name) { return testing::read_bytes(dir_->file(name)); }
  static std::unique_ptr<testing::TempDir> dir_;
  static std::string errors_;
};
std::unique_ptr<testing::TempDir> EstimateDuration::dir_;
std::string EstimateDuration::errors_;

TEST_F(EstimateDuration, ExactFromTheHeaderIn64KiB) {
  ASSERT_EQ(errors_, "");
  for (const char* name : {"n.wav", "n.aiff", "n.flac", "n.mp3"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> file = bytes(name);
    ASSERT_GT(file.size(), 3 * kPrefix) << "the prefix must be a small part of the file";
    const auto e = estimate_prefix(file, kPrefix);
    ASSERT_TRUE(e.has_value());
    EXPECT_TRUE(e->exact);
    EXPECT_NEAR(e->seconds, kLongToneSeconds, 1e-9);
    EXPECT_NEAR(e->seconds, decode_audio(file).duration_s(), 1.0 / kSampleRate);
  }
}

TEST_F(EstimateDuration, WithinTenPercentWhenExtrapolated) {
  ASSERT_EQ(errors_, "");
  for (const char* name : {"n_cbr.mp3", "n.ogg", "n.opus"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> file = bytes(name);
    ASSERT_GT(file.size(), 3 * kPrefix);
    const auto e = estimate_prefix(file, kPrefix);
    ASSERT_TRUE(e.has_value());
    EXPECT_FALSE(e->exact);
    EXPECT_NEAR(e->seconds, kLongToneSeconds, 0.1 * kLongToneSeconds);
    std::printf("[ estimate ] %s: %.2f s from the first 64 KiB of %zu bytes (true %.2f s)\n", name, e->seconds,
                file.size(), kLongToneSeconds);
  }
}

TEST_F(EstimateDuration, VorbisHeadersAloneGiveTheNominalBitrate) {
  // Before the first audio page, the identification header's nominal bitrate is all there is.
  ASSERT_EQ(errors_, "");
  const std::vector<uint8_t> file = bytes("n.ogg");
  size_t headers_end = 0;
  for (const auto& p : testing::ogg_pages(file))
    if (p.granule == 0) headers_end = p.offset + p.length;
  const auto e = estimate_prefix(file, headers_end);
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->exact);
  EXPECT_NEAR(e->seconds, kLongToneSeconds, 0.25 * kLongToneSeconds);
  std::printf("[ estimate ] n.ogg headers only: %.2f s (true %.2f s)\n", e->seconds, kLongToneSeconds);
}

TEST_F(EstimateDuration, FlacWithoutATotalIsDecodedAndExtrapolated) {
  // A streaming encoder's FLAC states no total (STREAMINFO's 36-bit count, bytes 21..25 of the file, is 0).
  ASSERT_EQ(errors_, "");
  std::vector<uint8_t> file = bytes("n.flac");
  file[21] &= 0xF0;
  std::fill(file.begin() + 22, file.begin() + 26, 0);
  const auto e = estimate_prefix(file, kPrefix);
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->exact);
  EXPECT_NEAR(e->seconds, kLongToneSeconds, 0.1 * kLongToneSeconds);
  std::printf("[ estimate ] n.flac without a total: %.2f s from 64 KiB (true %.2f s)\n", e->seconds, kLongToneSeconds);
}

TEST(EstimateDurationHeaders, AHeaderAloneAndTheSizeOfTheUpload) {
  // The first 44 bytes of a 1 s 16 kHz mono WAV upload, and the Content-Length.
  const auto wav = testing::make_wav_i16({.channels = 1, .sample_rate = 16000},
                                         testing::tone_i16(440, 1.0, 16000, 1, 0.5));
  auto e = estimate_duration_s(std::span<const uint8_t>(wav.data(), 44), wav.size());
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->exact);
  EXPECT_DOUBLE_EQ(e->seconds, 1.0);
  // A data size over the upload counts only what the upload holds (0x7FFFFFFF: a streaming placeholder).
  std::vector<uint8_t> lying = wav;
  lying[40] = 0xFF, lying[41] = 0xFF, lying[42] = 0xFF, lying[43] = 0x7F;
  e = estimate_duration_s(lying, lying.size());
  ASSERT_TRUE(e.has_value());
  EXPECT_DOUBLE_EQ(e->seconds, 1.0);
  // Ten hours on their way: the header and the size tell.
  const uint64_t ten_hours = uint64_t{36000} * 32000;
  const auto header = testing::make_wav({.channels = 1, .sample_rate = 16000, .data_size = ten_hours}, {});
  e = estimate_duration_s(header, 44 + ten_hours);
  ASSERT_TRUE(e.has_value());
  EXPECT_DOUBLE_EQ(e->seconds, 36000.0);
}

TEST(EstimateDurationHeaders, NothingToTellIsNullopt) {
  EXPECT_FALSE(estimate_duration_s({}, 0).has_value());
  EXPECT_FALSE(estimate_duration_s({}, 1000).has_value());
  const std::string text = "{\"model\": \"parakeet\"}";
  EXPECT_FALSE(estimate_duration_s(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()), 1 << 20)
                   .has_value());
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint8_t> garbage(1 + rng() % 8192);
    for (auto& b : garbage) b = static_cast<uint8_t>(rng());
    garbage[0] = static_cast<uint8_t>('A' + trial % 26);  // not an MPEG sync byte: random data, not a lucky frame
    EXPECT_FALSE(estimate_duration_s(garbage, garbage.size() * 10).has_value()) << "trial " << trial;
  }
  // A WAV header that names no channels is malformed: nullopt, not an exception.
  auto wav = testing::make_wav({.channels = 0}, std::vector<uint8_t>(100));
  EXPECT_FALSE(estimate_duration_s(wav, wav.size()).has_value());
}

TEST_F(EstimateDuration, EveryShortPrefixAndCorruptionIsSafe) {
  // Every prefix length 0..4096 of every fixture, against the whole file's size: a value, when there is one, is a
  // finite duration, and an exact one is the true duration. Then bytes of the first 4 KiB overwritten at random.
  ASSERT_EQ(errors_, "");
  std::mt19937 rng(11);
  for (const char* name : {"n.wav", "n.aiff", "n.flac", "n.mp3", "n_cbr.mp3", "n.ogg", "n.opus"}) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> file = bytes(name);
    int values = 0;
    for (size_t n = 0; n <= 4096; ++n) {
      const auto e = estimate_prefix(file, n);
      if (!e) continue;
      ++values;
      ASSERT_TRUE(std::isfinite(e->seconds) && e->seconds >= 0) << n << " bytes: " << e->seconds;
      if (e->exact) {
        ASSERT_NEAR(e->seconds, kLongToneSeconds, 1e-9) << n << " bytes";
      }
    }
    EXPECT_FALSE(estimate_prefix(file, 3).has_value());  // not even an MP3 frame header
    // Opus states no bitrate, and its first audio page (with a granule position) ends past 4 KiB.
    if (std::string(name) != "n.opus") {
      EXPECT_GT(values, 0);
    }
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> bad(file.begin(), file.begin() + 4096);
      for (int k = 0; k < 1 + trial % 4; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
      const auto e = estimate_duration_s(bad, file.size());
      if (e) {
        ASSERT_TRUE(std::isfinite(e->seconds) && e->seconds >= 0) << "trial " << trial;
      }
    }
  }
}

}  // namespace
}  // namespace steno::audio
