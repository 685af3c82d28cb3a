// A one-hour file: decoded within the default limits, refused cheaply (from its header) under a lower one. The file
// is a 44-byte header extended to its full length with resize_file: sparse on disk, silence when read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

constexpr int kRate = 8000;
constexpr int64_t kFrames = int64_t{3600} * kRate;

std::string write_one_hour_wav(const testing::TempDir& dir) {
  const std::string path = dir.file("hour.wav");
  // The header with the true data size but no payload yet, then zero-extended to the size it declares.
  testing::write_bytes(path, testing::make_wav({.channels = 1, .sample_rate = kRate, .data_size = 2 * kFrames}, {}));
  std::filesystem::resize_file(path, 44 + 2 * kFrames);
  return path;
}

TEST(AudioLimits, OneHourFileIsDecodedWithinTheDefaultLimit) {
  testing::TempDir dir;
  const DecodedAudio a = load_audio_file(write_one_hour_wav(dir));
  EXPECT_EQ(a.sample_rate_in, kRate);
  EXPECT_EQ(a.samples.size(), static_cast<size_t>(3600 * kSampleRate));
  EXPECT_DOUBLE_EQ(a.duration_s(), 3600.0);
  EXPECT_TRUE(std::all_of(a.samples.begin(), a.samples.end(), [](float s) { return s == 0.0f; }));
}

TEST(AudioLimits, OneHourFileIsRefusedFromItsHeaderUnderALowerLimit) {
  testing::TempDir dir;
  const std::string path = write_one_hour_wav(dir);
  const auto start = std::chrono::steady_clock::now();
  try {
    load_audio_file(path, {.max_duration_s = 1800});
    ADD_FAILURE() << "a one-hour file passed a 1800 s limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
    // The exact length comes from the header: nothing was decoded.
    EXPECT_STREQ(e.what(), "audio is 3600.0 s, over the limit of 1800 s (--max-audio-seconds)");
  }
  // Mapping the file and parsing its header: far below the cost of reading or decoding an hour.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(AudioLimits, ExactlyAtTheLimitIsAccepted) {
  const auto pcm = testing::tone_i16(440, 2.0, 16000, 1, 0.5);
  const auto wav = testing::make_wav_i16({.channels = 1, .sample_rate = 16000}, pcm);
  EXPECT_EQ(decode_audio(wav, {.max_duration_s = 2.0}).samples.size(), 32000u);
  EXPECT_THROW(decode_audio(wav, {.max_duration_s = 1.999}), Error);
}

}  // namespace
}  // namespace steno::audio
