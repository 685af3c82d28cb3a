// Test fixtures for the audio layer, generated at test time: WAV bytes written here, other formats encoded from
// them with the command-line tools (sox, flac, oggenc, opusenc, lame). A missing tool fails the test, never skips.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace steno::audio::testing {

// A directory under the system temp dir, removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct WavSpec {
  int channels = 1;
  int sample_rate = 16000;
  int bits = 16;         // 16 or 32 (with format_tag 3: float)
  int format_tag = 1;    // 1 PCM, 3 IEEE float
  // Header overrides, for lying files; -1 keeps the true value.
  int64_t data_size = -1;
  int64_t riff_size = -1;
};

// A canonical 44-byte-header WAV holding `payload` (raw little-endian sample bytes).
std::vector<uint8_t> make_wav(const WavSpec& spec, const std::vector<uint8_t>& payload);
std::vector<uint8_t> make_wav_i16(const WavSpec& spec, const std::vector<int16_t>& interleaved);
std::vector<uint8_t> make_wav_f32(const WavSpec& spec, const std::vector<float>& interleaved);

// amplitude * sin(2 pi freq t) for `seconds`, as int16, every channel equal (or channel 1 inverted when asked).
std::vector<int16_t> tone_i16(double freq, double seconds, int rate, int channels, double amplitude,
                              bool invert_second_channel = false);
// One second of a 440 Hz tone as a 16 kHz mono 16-bit WAV file's bytes.
std::vector<uint8_t> one_second_wav();

std::vector<uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);

// Runs `command` through the shell after checking that `tool` is on PATH; returns "" on success, otherwise a
// message naming the tool (missing, or the failed command and its exit status) for the test to FAIL with.
std::string run_tool(const std::string& tool, const std::string& command);

// Encodes the WAV `stem`.wav in `dir` with the real encoders into `stem`.flac, .aiff (sox), .ogg (oggenc), .opus
// (opusenc) and .mp3 (LAME, with its Info tag). Returns "" or run_tool's messages for the test to FAIL with.
std::string encode_all(const TempDir& dir, const std::string& stem);

// A FLAC file's frames as `flac --analyze` lists them (not steno's parser): where each starts and how long it is.
struct FlacFrame {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t samples = 0;  // per channel
};
// Empty, with `error` set, if the tool fails.
std::vector<FlacFrame> flac_frames(const std::string& flac_path, std::string* error);

// The pages of an Ogg stream, walked by their headers (no CRC check): offset, length and granule position.
struct OggPage {
  size_t offset = 0;
  size_t length = 0;
  int64_t granule = 0;
};
std::vector<OggPage> ogg_pages(const std::vector<uint8_t>& bytes);

// Fraction of the signal's power at `freq` (Hann-windowed single-bin DFT); ~1 for a pure tone at freq.
double tone_power_fraction(const float* x, size_t n, double freq, int rate);
double rms(const float* x, size_t n);
// The largest |a[i] - b[i]| over the first n samples.
double max_abs_diff(const float* a, const float* b, size_t n);
int64_t zero_crossings(const float* x, size_t n);

}  // namespace steno::audio::testing
