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

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
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
  write_file(o.make_clip, wav_pcm16(samples, steno::audio::kSampleRate));
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
