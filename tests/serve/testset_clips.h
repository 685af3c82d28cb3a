// The espeak test set as the core tests use it: each clip decoded to 16 kHz mono, with its reference transcript
// (reference_transcripts.tsv: what `steno transcribe` prints for it, which tests/engine checks).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "steno/audio/decode.h"

namespace steno::serve::testing {

struct Clip {
  std::vector<float> pcm;
  std::string reference;
};

inline std::vector<Clip> testset_clips() {
  const std::filesystem::path dir = std::filesystem::path(STENO_TEST_DATA) / "testset" / "espeak";
  std::ifstream tsv(dir / "reference_transcripts.tsv");
  std::vector<Clip> clips;
  for (std::string line; std::getline(tsv, line);) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    clips.push_back({audio::load_audio_file((dir / line.substr(0, tab)).string()).samples, line.substr(tab + 1)});
  }
  return clips;
}

}  // namespace steno::serve::testing
