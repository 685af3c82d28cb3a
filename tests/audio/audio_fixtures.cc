#include "audio_fixtures.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numbers>
#include <random>
#include <sstream>
#include <stdexcept>

namespace steno::audio::testing {
namespace {

void put_u16(std::vector<uint8_t>& b, uint32_t v) {
  b.push_back(v & 0xFF);
  b.push_back((v >> 8) & 0xFF);
}
void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  put_u16(b, v & 0xFFFF);
  put_u16(b, v >> 16);
}
void put_id(std::vector<uint8_t>& b, const char* id) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(id[i]));
}

}  // namespace

TempDir::TempDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("steno_audio_test_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<uint8_t> make_wav(const WavSpec& s, const std::vector<uint8_t>& payload) {
  const uint32_t block_align = static_cast<uint32_t>(s.channels * s.bits / 8);
  const auto data_size = static_cast<uint32_t>(s.data_size >= 0 ? s.data_size : static_cast<int64_t>(payload.size()));
  const auto riff_size =
      static_cast<uint32_t>(s.riff_size >= 0 ? s.riff_size : static_cast<int64_t>(36 + payload.size()));
  std::vector<uint8_t> b;
  b.reserve(44 + payload.size());
  put_id(b, "RIFF");
  put_u32(b, riff_size);
  put_id(b, "WAVE");
  put_id(b, "fmt ");
  put_u32(b, 16);
  put_u16(b, static_cast<uint32_t>(s.format_tag));
  put_u16(b, static_cast<uint32_t>(s.channels));
  put_u32(b, static_cast<uint32_t>(s.sample_rate));
  put_u32(b, static_cast<uint32_t>(s.sample_rate) * block_align);
  put_u16(b, block_align);
  put_u16(b, static_cast<uint32_t>(s.bits));
  put_id(b, "data");
  put_u32(b, data_size);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

std::vector<uint8_t> make_wav_i16(const WavSpec& spec, const std::vector<int16_t>& interleaved) {
  std::vector<uint8_t> payload(interleaved.size() * 2);
  for (size_t i = 0; i < interleaved.size(); ++i) {
    const auto v = static_cast<uint16_t>(interleaved[i]);
    payload[2 * i] = v & 0xFF;
    payload[2 * i + 1] = v >> 8;
  }
  WavSpec s = spec;
  s.bits = 16;
  s.format_tag = 1;
  return make_wav(s, payload);
}

std::vector<uint8_t> make_wav_f32(const WavSpec& spec, const std::vector<float>& interleaved) {
  std::vector<uint8_t> payload(interleaved.size() * 4);
  std::memcpy(payload.data(), interleaved.data(), payload.size());  // x86/ARM are little-endian
  WavSpec s = spec;
  s.bits = 32;
  s.format_tag = 3;
  return make_wav(s, payload);
}

std::vector<uint8_t> one_second_wav() {
  return make_wav_i16({.channels = 1, .sample_rate = 16000}, tone_i16(440, 1.0, 16000, 1, 0.5));
}

std::vector<int16_t> tone_i16(double freq, double seconds, int rate, int channels, double amplitude,
                              bool invert_second_channel) {
  const auto frames = static_cast<size_t>(std::llround(seconds * rate));
  std::vector<int16_t> out(frames * static_cast<size_t>(channels));
  for (size_t f = 0; f < frames; ++f) {
    const double v = amplitude * 32767.0 * std::sin(2.0 * std::numbers::pi * freq * static_cast<double>(f) / rate);
    const auto s = static_cast<int16_t>(std::lround(v));
    for (int c = 0; c < channels; ++c)
      out[f * static_cast<size_t>(channels) + static_cast<size_t>(c)] =
          (c == 1 && invert_second_channel) ? static_cast<int16_t>(-s) : s;
  }
  return out;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string run_tool(const std::string& tool, const std::string& command) {
  const std::string probe = "command -v " + tool + " >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0)
    return "required tool '" + tool + "' is not on PATH (scripts/install-deps.sh installs sox, flac, vorbis-tools, "
           "opus-tools, lame); this test does not skip";
  const int status = std::system(command.c_str());
  if (status != 0) return "command failed (status " + std::to_string(status) + "): " + command;
  return "";
}

std::string encode_all(const TempDir& dir, const std::string& stem) {
  const std::string wav = dir.file(stem + ".wav"), q = " >/dev/null 2>&1";
  return run_tool("flac", "flac -s -f -o " + dir.file(stem + ".flac") + " " + wav + q) +
         run_tool("sox", "sox " + wav + " " + dir.file(stem + ".aiff") + q) +
         run_tool("oggenc", "oggenc -Q -o " + dir.file(stem + ".ogg") + " " + wav + q) +
         run_tool("opusenc", "opusenc --quiet " + wav + " " + dir.file(stem + ".opus") + q) +
         run_tool("lame", "lame --quiet " + wav + " " + dir.file(stem + ".mp3") + q);
}

std::vector<FlacFrame> flac_frames(const std::string& flac_path, std::string* error) {
  const std::string ana = flac_path + ".ana";
  *error = run_tool("flac", "flac -a -s -f -o " + ana + " " + flac_path + " >/dev/null 2>&1");
  std::vector<FlacFrame> frames;
  if (!error->empty()) return frames;
  std::ifstream in(ana);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("frame=", 0) != 0) continue;
    std::istringstream fields(line);
    FlacFrame f;
    for (std::string field; fields >> field;) {
      const auto eq = field.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
      if (key == "offset") f.offset = std::stoull(value);
      if (key == "bits") f.bytes = std::stoull(value) / 8;
      if (key == "blocksize") f.samples = std::stoull(value);
    }
    frames.push_back(f);
  }
  if (frames.empty()) *error = "flac --analyze listed no frames for " + flac_path;
  return frames;
}

std::vector<OggPage> ogg_pages(const std::vector<uint8_t>& b) {
  std::vector<OggPage> pages;
  for (size_t at = 0; at + 27 <= b.size() && b[at] == 'O' && b[at + 1] == 'g' && b[at + 2] == 'g' && b[at + 3] == 'S';) {
    const size_t segments = b[at + 26];
    size_t length = 27 + segments;
    for (size_t i = 0; i < segments && at + 27 + i < b.size(); ++i) length += b[at + 27 + i];
    int64_t granule = 0;
    for (int i = 7; i >= 0; --i) granule = (granule << 8) | b[at + 6 + static_cast<size_t>(i)];
    pages.push_back({at, length, granule});
    at += length;
  }
  return pages;
}

double tone_power_fraction(const float* x, size_t n, double freq, int rate) {
  double re = 0, im = 0, window_power = 0, total = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(n));
    const double phase = 2.0 * std::numbers::pi * freq * static_cast<double>(i) / rate;
    re += w * x[i] * std::cos(phase);
    im -= w * x[i] * std::sin(phase);
    window_power += w * w;
    total += w * w * x[i] * x[i];
  }
  // For a windowed tone A sin(...), |X|^2 ~ A^2 (sum w)^2 / 4 and total ~ A^2 sum(w^2) / 2.
  double sum_w = 0;
  for (size_t i = 0; i < n; ++i)
    sum_w += 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(n));
  if (total == 0) return 0;
  const double tone_power = (re * re + im * im) * 2.0 * window_power / (sum_w * sum_w);
  return tone_power / total;
}

double rms(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return n ? std::sqrt(s / static_cast<double>(n)) : 0.0;
}

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

int64_t zero_crossings(const float* x, size_t n) {
  int64_t count = 0;
  for (size_t i = 1; i < n; ++i)
    if ((x[i - 1] < 0) != (x[i] < 0)) ++count;
  return count;
}

}  // namespace steno::audio::testing
