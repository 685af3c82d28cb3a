#include "serve_load_make_clip.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "steno/audio/decode.h"

namespace serve_load {

namespace {

std::vector<std::filesystem::path> flac_files(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".flac") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error("no .flac files in " + dir);
  return files;
}

void put_le(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A 16-bit PCM mono WAV (44-byte RIFF header); samples in [-1, 1] scaled by 32768, as the decoder reads them.
void write_wav_pcm16(const std::string& path, const std::vector<float>& samples, int sample_rate) {
  const uint32_t data_bytes = static_cast<uint32_t>(samples.size() * 2);
  std::string wav = "RIFF";
  put_le(wav, 36 + data_bytes, 4);
  wav += "WAVEfmt ";
  put_le(wav, 16, 4);               // fmt chunk size
  put_le(wav, 1, 2);                // PCM
  put_le(wav, 1, 2);                // mono
  put_le(wav, sample_rate, 4);      // sample rate
  put_le(wav, sample_rate * 2, 4);  // byte rate
  put_le(wav, 2, 2);                // block align
  put_le(wav, 16, 2);               // bits per sample
  wav += "data";
  put_le(wav, data_bytes, 4);
  for (float s : samples) {
    const long v = std::clamp(std::lround(static_cast<double>(s) * 32768.0), -32768L, 32767L);
    put_le(wav, static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(v))), 2);
  }
  std::ofstream f(path, std::ios::binary);
  f.write(wav.data(), static_cast<std::streamsize>(wav.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int run_make_clip(const Options& o) {
  const auto files = flac_files(o.testset + "/audio");
  const size_t wanted = static_cast<size_t>(std::llround(o.clip_seconds * steno::audio::kSampleRate));
  std::vector<float> samples;
  Json sources = Json::array();
  for (size_t i = 0; samples.size() < wanted; ++i) {
    const auto& file = files[i % files.size()];
    const steno::audio::DecodedAudio audio = steno::audio::load_audio_file(file.string());
    if (audio.samples.empty()) throw std::runtime_error(file.string() + " has no samples");
    const size_t take = std::min(audio.samples.size(), wanted - samples.size());
    samples.insert(samples.end(), audio.samples.begin(), audio.samples.begin() + static_cast<std::ptrdiff_t>(take));
    sources.push_back({{"file", file.filename().string()}, {"seconds", audio.duration_s()},
                       {"used_seconds", static_cast<double>(take) / steno::audio::kSampleRate}});
  }
  write_wav_pcm16(o.make_clip, samples, steno::audio::kSampleRate);
  const Json made = {{"clip", o.make_clip},
                     {"format", "WAV, 16-bit PCM, mono, 16 kHz"},
                     {"samples", samples.size()},
                     {"seconds", static_cast<double>(samples.size()) / steno::audio::kSampleRate},
                     {"testset", o.testset},
                     {"how", "the FLAC clips of testset/audio in name order, decoded by steno's audio library "
                             "(16 kHz mono), concatenated, repeated as needed, cut to the length"},
                     {"sources", sources}};
  std::cout << made.dump(2) << std::endl;
  std::fprintf(stderr, "serve_load: wrote %s: %zu samples (%.3f s) from %zu clip files\n", o.make_clip.c_str(),
               samples.size(), static_cast<double>(samples.size()) / steno::audio::kSampleRate, sources.size());
  return 0;
}

}  // namespace serve_load
