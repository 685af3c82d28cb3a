// MP4/M4A and WebM/Matroska through FFmpeg (src/audio/ffmpeg_reader.h): the formats browsers and phones record,
// made here by the ffmpeg command-line tool from the same 2 s, 440 Hz, 44.1 kHz stereo tone as the other formats'
// tests. In a build without FFmpeg these are skipped; decode_errors_test.cc checks that build's refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

using testing::TempDir;

constexpr double kToneSeconds = 2.0;
constexpr double kToneFreq = 440.0;
constexpr double kToneAmplitude = 0.5;

class DecodeFfmpeg : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    const std::string wav = dir_->file("tone.wav");
    const auto tone = testing::tone_i16(kToneFreq, kToneSeconds, 44100, 2, kToneAmplitude);
    testing::write_bytes(wav, testing::make_wav_i16({.channels = 2, .sample_rate = 44100}, tone));
    const std::string ff = "ffmpeg -nostdin -v error -y ", in = "-i " + wav + " ";
    const std::string video = "-f lavfi -i testsrc=duration=2:size=64x48:rate=10 ";
    const std::map<std::string, std::string> commands = {
        {"tone.m4a", ff + in + "-c:a aac -b:a 128k " + dir_->file("tone.m4a")},
        {"faststart.mp4", ff + in + "-c:a aac -b:a 128k -movflags +faststart " + dir_->file("faststart.mp4")},
        {"tone.webm", ff + in + "-c:a libopus -b:a 96k " + dir_->file("tone.webm")},
        {"flac.mkv", ff + in + "-c:a flac " + dir_->file("flac.mkv")},
        {"mp2.mkv", ff + in + "-c:a mp2 " + dir_->file("mp2.mkv")},
        {"video.mp4", ff + video + in + "-c:v mpeg4 -c:a aac -shortest " + dir_->file("video.mp4")},
        {"silent-video.mp4", ff + video + "-c:v mpeg4 " + dir_->file("silent-video.mp4")},
    };
    for (const auto& [file, command] : commands) errors_[file] = testing::run_tool("ffmpeg", command);
  }
  static void TearDownTestSuite() { dir_.reset(); }

  void SetUp() override {
    if (!decodes_mp4_and_webm()) GTEST_SKIP() << "built without FFmpeg (STENO_WITH_FFMPEG)";
  }

  std::vector<uint8_t> bytes(const std::string& file) {
    EXPECT_EQ(errors_[file], "");
    return testing::read_bytes(dir_->file(file));
  }

  // Decodes `file` and checks the tone, as decode_formats_test.cc does for the other formats.
  DecodedAudio decode_tone(const std::string& file, double length_tolerance_s) {
    EXPECT_EQ(errors_[file], "");
    if (!errors_[file].empty()) return {};
    DecodedAudio a = load_audio_file(dir_->file(file));
    EXPECT_EQ(a.sample_rate, kSampleRate);
    EXPECT_NEAR(a.duration_s(), kToneSeconds, length_tolerance_s) << a.format;
    EXPECT_TRUE(a.warnings.empty()) << a.warnings[0];
    const size_t begin = kSampleRate / 2, n = kSampleRate;
    EXPECT_GE(a.samples.size(), begin + n);
    if (a.samples.size() >= begin + n) {
      EXPECT_GT(testing::tone_power_fraction(a.samples.data() + begin, n, kToneFreq, kSampleRate), 0.95) << a.format;
      EXPECT_NEAR(testing::rms(a.samples.data() + begin, n), kToneAmplitude / std::sqrt(2.0), 0.03) << a.format;
    }
    return a;
  }

  static std::unique_ptr<TempDir> dir_;
  static std::map<std::string, std::string> errors_;
};

std::unique_ptr<TempDir> DecodeFfmpeg::dir_;
std::map<std::string, std::string> DecodeFfmpeg::errors_;

void expect_ffmpeg_error(const std::vector<uint8_t>& bytes, ErrorCode code, const std::string& needle,
                  const AudioLimits& limits = {}) {
  try {
    decode_audio(bytes, limits);
    ADD_FAILURE() << "decoded; expected an error containing: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST_F(DecodeFfmpeg, M4aAac) {
  // FFmpeg's AAC encoder writes an edit list over its 1,024 frames of priming; the last frame's fill stays (the
  // length is the source's plus less than one 1,024-frame AAC frame).
  const DecodedAudio a = decode_tone("tone.m4a", 0.025);
  EXPECT_EQ(a.format, "mp4/aac");
  EXPECT_EQ(a.channels_in, 2);
  EXPECT_EQ(a.sample_rate_in, 44100);
}

TEST_F(DecodeFfmpeg, WebmOpus) {
  // What a browser's MediaRecorder uploads. Opus decodes at 48 kHz; WebM's codec delay trims the pre-skip.
  const DecodedAudio a = decode_tone("tone.webm", 0.005);
  EXPECT_EQ(a.format, "matroska/opus");
  EXPECT_EQ(a.sample_rate_in, 48000);
}

TEST_F(DecodeFfmpeg, LosslessMatroskaEqualsTheWav) {
  const DecodedAudio flac = decode_tone("flac.mkv", 0.0);
  const DecodedAudio wav = load_audio_file(dir_->file("tone.wav"));
  EXPECT_EQ(flac.format, "matroska/flac");
  ASSERT_EQ(flac.samples.size(), wav.samples.size());
  EXPECT_EQ(testing::max_abs_diff(flac.samples.data(), wav.samples.data(), wav.samples.size()), 0.0);
}

TEST_F(DecodeFfmpeg, AVideosSoundtrackIsDecoded) {
  const DecodedAudio a = decode_tone("video.mp4", 0.03);
  EXPECT_EQ(a.format, "mp4/aac");
}

TEST_F(DecodeFfmpeg, NoAudioStreamOrAnUnsupportedCodecIsRefused) {
  expect_ffmpeg_error(bytes("silent-video.mp4"), ErrorCode::kInvalidArgument, "the MP4/M4A file holds no audio stream");
  expect_ffmpeg_error(bytes("mp2.mkv"), ErrorCode::kUnimplemented, "mp2 audio in WebM/Matroska is not supported");
}

TEST_F(DecodeFfmpeg, CutOffUploadIsDecodedAsFarAsItGoes) {
  // moov first (faststart): the index survives the cut, the audio after it is gone.
  std::vector<uint8_t> mp4 = bytes("faststart.mp4");
  mp4.resize(mp4.size() * 6 / 10);
  const DecodedAudio a = decode_audio(mp4);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("truncated: the MP4/M4A header says 88200 frames (2.00 s), the file holds"),
            std::string::npos) << a.warnings[0];
  EXPECT_GT(a.duration_s(), 0.6);
  EXPECT_LT(a.duration_s(), 1.6);

  std::vector<uint8_t> webm = bytes("tone.webm");
  webm.resize(webm.size() / 2);
  const DecodedAudio w = decode_audio(webm);
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("truncated: the WebM/Matroska header says 96"), std::string::npos)  // 2.0x s at 48k
      << w.warnings[0];
  EXPECT_GT(w.duration_s(), 0.5);
  EXPECT_LT(w.duration_s(), 1.5);

  // moov last (FFmpeg's default): cut off, there is no index to read any audio by.
  std::vector<uint8_t> m4a = bytes("tone.m4a");
  m4a.resize(m4a.size() - 400);
  expect_ffmpeg_error(m4a, ErrorCode::kDataLoss, "malformed or truncated MP4/M4A");
}

TEST_F(DecodeFfmpeg, DurationLimitFromTheContainer) {
  expect_ffmpeg_error(bytes("tone.m4a"), ErrorCode::kOutOfRange, "audio is 2.0 s, over the limit of 1.5 s",
               {.max_duration_s = 1.5});
}

TEST_F(DecodeFfmpeg, EstimatedDurationFromAPrefix) {
  const std::vector<uint8_t> mp4 = bytes("faststart.mp4");
  const auto e = estimate_duration_s(mp4, mp4.size());
  ASSERT_TRUE(e.has_value());
  EXPECT_NEAR(e->seconds, kToneSeconds, 0.1);
}

}  // namespace
}  // namespace steno::audio
