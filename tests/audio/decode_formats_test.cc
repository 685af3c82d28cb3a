// Each supported container decodes to 16 kHz mono with the expected length and the tone where expected. The
// fixtures are a 2 s, 440 Hz, 44.1 kHz stereo tone encoded by the real command-line encoders.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <thread>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

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
    EXPECT_TRUE(a.warnings.empty()) << a.warnings[0];
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

// Concatenated Ogg Vorbis files (a chained stream) decode link after link: twice the tone, exactly; a link of
// another sample rate is refused by name.
TEST_F(DecodeFormats, OggVorbisChainedLinksDecodeOneAfterAnother) {
  ASSERT_EQ(errors_["ogg"], "");
  std::vector<uint8_t> tone = testing::read_bytes(dir_->file("tone.ogg"));
  std::vector<uint8_t> chained = tone;
  chained.insert(chained.end(), tone.begin(), tone.end());
  const DecodedAudio a = decode_audio(chained);
  EXPECT_EQ(a.format, "ogg/vorbis");
  EXPECT_EQ(a.samples.size(), 2 * static_cast<size_t>(kSeconds * kSampleRate));
  EXPECT_TRUE(a.warnings.empty()) << a.warnings[0];

  const std::string wav22 = dir_->file("tone22.wav"), ogg22 = dir_->file("tone22.ogg");
  testing::write_bytes(wav22, testing::make_wav_i16({.channels = 2, .sample_rate = 22050},
                                                    testing::tone_i16(kFreq, 0.5, 22050, 2, kAmplitude)));
  ASSERT_EQ(testing::run_tool("oggenc", "oggenc -Q -o " + ogg22 + " " + wav22 + " >/dev/null 2>&1"), "");
  const std::vector<uint8_t> other = testing::read_bytes(ogg22);
  chained = tone;
  chained.insert(chained.end(), other.begin(), other.end());
  try {
    decode_audio(chained);
    ADD_FAILURE() << "a chain that changes its sample rate decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(std::string(e.what()).find("changes sample rate or channel count at link 2"), std::string::npos)
        << e.what();
  }
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

TEST_F(DecodeFormats, Id3TaggedFlacAndMp3) {
  // An ID3v2 tag (10-byte header, 10 bytes of body) in front of FLAC or MP3, as taggers write it.
  for (const char* file : {"tone.flac", "tone.mp3"}) {
    std::vector<uint8_t> bytes = {'I', 'D', '3', 4, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    ASSERT_EQ(errors_[std::string(file).substr(5)], "");
    const std::vector<uint8_t> audio = testing::read_bytes(dir_->file(file));
    bytes.insert(bytes.end(), audio.begin(), audio.end());
    EXPECT_EQ(decode_audio(bytes).samples, decode_audio(audio).samples) << file;
  }
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

// Every WAV encoding sox writes and libsndfile reads: the tone survives, at the right length.
TEST_F(DecodeFormats, WavEncodings) {
  struct Case {
    const char* sox_args;
    const char* format;
    double length_tolerance_s;  // ADPCM pads the last block
  };
  const Case cases[] = {
      {"-e unsigned-integer -b 8", "wav/pcm_u8", 0.0},    {"-e signed-integer -b 24", "wav/pcm_24", 0.0},
      {"-e signed-integer -b 32", "wav/pcm_32", 0.0},     {"-e floating-point -b 32", "wav/float", 0.0},
      {"-e floating-point -b 64", "wav/double", 0.0},     {"-e mu-law", "wav/ulaw", 0.0},
      {"-e a-law", "wav/alaw", 0.0},                      {"-e ima-adpcm", "wav/ima_adpcm", 0.02},
      {"-e ms-adpcm", "wav/ms_adpcm", 0.04},              {"-e gsm-full-rate -r 8000 -c 1", "wav/gsm610", 0.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sox_args);
    const std::string out = dir_->file("enc.wav");
    const std::string command = "sox " + dir_->file("tone.wav") + " " + c.sox_args + " " + out + " >/dev/null 2>&1";
    ASSERT_EQ(testing::run_tool("sox", command), "");
    const DecodedAudio a = load_audio_file(out);
    EXPECT_EQ(a.format, c.format);
    EXPECT_NEAR(a.duration_s(), kSeconds, c.length_tolerance_s);
    ASSERT_GE(a.samples.size(), 24000u);
    EXPECT_GT(testing::tone_power_fraction(a.samples.data() + 8000, 16000, kFreq, kSampleRate), 0.95);
    EXPECT_NEAR(testing::rms(a.samples.data() + 8000, 16000), kAmplitude / std::sqrt(2.0), 0.05);
  }
}

// A decode's result, or its error, as one comparable string.
std::string outcome(const std::vector<uint8_t>& bytes) {
  try {
    const DecodedAudio a = decode_audio(bytes);
    std::string s = std::to_string(a.samples.size()) + " samples, sum " +
                    std::to_string(std::accumulate(a.samples.begin(), a.samples.end(), 0.0));
    for (const auto& w : a.warnings) s += "; " + w;
    return s;
  } catch (const Error& e) {
    return std::string("error ") + error_code_name(e.code()) + ": " + e.what();
  }
}

TEST_F(DecodeFormats, ParallelDecodesMatchSerialOnes) {
  // Decoders share no state (libsndfile's open error is global: opens are serialised); cut-off inputs (decoded with
  // a warning, or refused when the cut leaves no complete frame) and bad ones interleave too.
  const std::vector<std::string> files = {"tone.wav", "tone.flac", "tone.ogg", "tone.opus", "tone.mp3", "tone.aiff"};
  for (const auto& [name, error] : errors_) ASSERT_EQ(error, "") << name;
  std::vector<std::vector<uint8_t>> inputs;
  for (const auto& f : files) {
    const std::vector<uint8_t> whole = testing::read_bytes(dir_->file(f));
    inputs.push_back(whole);
    inputs.emplace_back(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(whole.size() / 2));
  }
  inputs.emplace_back(1000, 'x');
  std::vector<std::string> expected;
  for (const auto& in : inputs) expected.push_back(outcome(in));
  int warned = 0;
  for (const auto& e : expected) warned += e.find("; truncated: ") != std::string::npos;
  EXPECT_GE(warned, 4);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < inputs.size(); ++i) {
          const size_t k = (i + static_cast<size_t>(t)) % inputs.size();
          if (outcome(inputs[k]) != expected[k]) ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace steno::audio
