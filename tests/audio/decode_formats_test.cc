// Each supported container decodes to 16 kHz mono with the expected length and the tone where expected. The
// fixtures are a 2 s, 440 Hz, 44.1 kHz stereo tone encoded by the real command-line encoders.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"

namespace steno::audio {
namespace {

using testing::TempDir;

constexpr double kSeconds = 2.0;
constexpr double kFreq = 440.0;
constexpr double kAmplitude = 0.5;

class DecodeFormats : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    const std::string wav = dir_->file("tone.wav");
    testing::write_bytes(wav, testing::make_wav_i16({.channels = 2, .sample_rate = 44100},
                                                    testing::tone_i16(kFreq, kSeconds, 44100, 2, kAmplitude)));
    const std::string q = " >/dev/null 2>&1";
    commands_ = {
        {"flac", {"flac", "flac -s -f -o " + dir_->file("tone.flac") + " " + wav + q}},
        {"ogg", {"oggenc", "oggenc -Q -o " + dir_->file("tone.ogg") + " " + wav + q}},
        {"opus", {"opusenc", "opusenc --quiet " + wav + " " + dir_->file("tone.opus") + q}},
        {"mp3", {"lame", "lame --quiet " + wav + " " + dir_->file("tone.mp3") + q}},
        // VBR with no Xing/Info header (-t): the length is unknown until every frame is scanned.
        {"mp3_vbr_noxing", {"lame", "lame --quiet -V 5 -t " + wav + " " + dir_->file("vbr_noxing.mp3") + q}},
        {"aiff", {"sox", "sox " + wav + " " + dir_->file("tone.aiff") + q}},
        {"wav24", {"sox", "sox " + wav + " -b 24 -r 48000 " + dir_->file("tone24.wav") + q}},
    };
    for (const auto& [name, tool_and_command] : commands_)
      errors_[name] = testing::run_tool(tool_and_command.first, tool_and_command.second);
  }
  static void TearDownTestSuite() { dir_.reset(); }

  // Decodes fixture `name` (file `file`) and checks what every format must satisfy.
  DecodedAudio decode(const std::string& name, const std::string& file, double length_tolerance_s) {
    EXPECT_EQ(errors_[name], "");
    if (!errors_[name].empty()) return {};
    DecodedAudio a = load_audio_file(dir_->file(file));
    EXPECT_EQ(a.sample_rate, kSampleRate);
    EXPECT_NEAR(a.duration_s(), kSeconds, length_tolerance_s) << a.format;
    EXPECT_TRUE(std::all_of(a.samples.begin(), a.samples.end(), [](float s) { return s >= -1.0f && s <= 1.0f; }));
    // The middle second (clear of codec priming/padding) is the tone at the right level.
    const size_t begin = kSampleRate / 2, n = kSampleRate;
    EXPECT_GE(a.samples.size(), begin + n);
    if (a.samples.size() >= begin + n) {
      EXPECT_GT(testing::tone_power_fraction(a.samples.data() + begin, n, kFreq, kSampleRate), 0.95) << a.format;
      EXPECT_NEAR(testing::rms(a.samples.data() + begin, n), kAmplitude / std::sqrt(2.0), 0.03) << a.format;
      EXPECT_LT(testing::tone_power_fraction(a.samples.data() + begin, n, 2 * kFreq, kSampleRate), 0.01);
    }
    return a;
  }

  static std::unique_ptr<TempDir> dir_;
  static std::map<std::string, std::pair<std::string, std::string>> commands_;
  static std::map<std::string, std::string> errors_;
};

std::unique_ptr<TempDir> DecodeFormats::dir_;
std::map<std::string, std::pair<std::string, std::string>> DecodeFormats::commands_;
std::map<std::string, std::string> DecodeFormats::errors_;

TEST_F(DecodeFormats, WavPcm16Stereo44k) {
  const DecodedAudio a = load_audio_file(dir_->file("tone.wav"));
  EXPECT_EQ(a.format, "wav/pcm_16");
  EXPECT_EQ(a.channels_in, 2);
  EXPECT_EQ(a.sample_rate_in, 44100);
  EXPECT_EQ(a.samples.size(), 32000u);  // 88200 frames * 16000 / 44100 exactly
  decode("wav", "tone.wav", 0.0);
}

TEST_F(DecodeFormats, Wav24Bit48k) {
  const DecodedAudio a = decode("wav24", "tone24.wav", 0.0);
  EXPECT_EQ(a.format, "wav/pcm_24");  // sox writes WAVE_FORMAT_EXTENSIBLE for 24-bit; still "wav"
  EXPECT_EQ(a.sample_rate_in, 48000);
}

TEST_F(DecodeFormats, Flac) {
  const DecodedAudio a = decode("flac", "tone.flac", 0.0);
  EXPECT_EQ(a.format, "flac/pcm_16");
  EXPECT_EQ(a.channels_in, 2);
}

TEST_F(DecodeFormats, OggVorbis) {
  const DecodedAudio a = decode("ogg", "tone.ogg", 0.0);
  EXPECT_EQ(a.format, "ogg/vorbis");
}

TEST_F(DecodeFormats, OggOpus) {
  // libsndfile decodes Opus at 48 kHz and honours pre-skip and end trimming, so the length is exact.
  const DecodedAudio a = decode("opus", "tone.opus", 0.0);
  EXPECT_EQ(a.format, "ogg/opus");
  EXPECT_EQ(a.sample_rate_in, 48000);
}

TEST_F(DecodeFormats, Mp3) {
  // LAME writes an Info tag with encoder delay/padding; mpg123 (inside libsndfile) trims it: gapless.
  const DecodedAudio a = decode("mp3", "tone.mp3", 0.0);
  EXPECT_EQ(a.format, "mpeg/layer3");
}

TEST_F(DecodeFormats, Mp3VbrWithoutXingHeaderIsDecodedWhole) {
  // Regression: libsndfile stops MP3 reads at mpg123's pre-scan length guess (from the first frame's bitrate), which
  // returned 0.33 s of this 2 s file. Without a LAME tag the ~1105-sample decoder delay is not trimmed.
  const DecodedAudio a = decode("mp3_vbr_noxing", "vbr_noxing.mp3", 0.05);
  EXPECT_EQ(a.format, "mpeg/layer3");
}

TEST_F(DecodeFormats, ConcatenatedMp3IsDecodedWhole) {
  // `cat a.mp3 b.mp3`: the first file's Info header counts only its own frames; both halves must come out.
  ASSERT_EQ(errors_["mp3"], "");
  std::vector<uint8_t> twice = testing::read_bytes(dir_->file("tone.mp3"));
  const size_t once = twice.size();
  twice.insert(twice.end(), twice.begin(), twice.begin() + static_cast<ptrdiff_t>(once));
  const DecodedAudio a = decode_audio(twice);
  EXPECT_NEAR(a.duration_s(), 2 * kSeconds, 0.1);
  EXPECT_GT(testing::tone_power_fraction(a.samples.data() + 40000, 16000, kFreq, kSampleRate), 0.95);
}

TEST_F(DecodeFormats, Aiff) {
  const DecodedAudio a = decode("aiff", "tone.aiff", 0.0);
  EXPECT_EQ(a.format, "aiff/pcm_16");
}

TEST_F(DecodeFormats, InMemoryEqualsFile) {
  ASSERT_EQ(errors_["flac"], "");
  const std::vector<uint8_t> bytes = testing::read_bytes(dir_->file("tone.flac"));
  EXPECT_EQ(decode_audio(bytes).samples, load_audio_file(dir_->file("tone.flac")).samples);
}

}  // namespace
}  // namespace steno::audio
