// The benchmark protocol's `mix` clips as serve_load sends them (--open-loop and --offline): the mix's lengths
// (mix_workload.h: 1,000 log-normal lengths, fixed seed) cut from the --testset FLAC clips decoded and concatenated
// in name order, each a 16 kHz 16-bit WAV request; and their references, each clip sent alone first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve_load_common.h"
#include "serve_load_http.h"

namespace serve_load {

// One distinct clip of the mix: its request and the text every answer to it must have.
struct MixClip {
  int index = 0;  // in the mix's drawn order
  int64_t samples = 0;
  double seconds = 0;
  Request request;
  std::string reference;
};

// The --testset FLAC clips decoded with steno's audio library and concatenated in name order (as --make-clip reads
// them and cuda_engine_bench's speech_stream() joins them).
std::vector<float> speech_stream(const std::string& testset);

// The first `count` clips of the mix, each as a WAV request (references not yet known).
std::vector<MixClip> make_mix_clips(const Options& o, const std::vector<float>& stream, int count);

// Mean and median of lengths in seconds, to show what a set of clips is.
Json lengths_summary(std::vector<int64_t> samples);

// Each clip sent alone, one after another on one connection (reopened when the server closes it): its answer's text
// becomes the clip's reference. Empty texts are allowed (a short cut may hold no word) but counted.
struct ReferencePass {
  bool ok = true;
  std::string error;  // the first failure
  int empty_texts = 0;
  double seconds = 0;
};
ReferencePass fetch_references(const tcp::endpoint& ep, std::vector<MixClip>& clips);
Json references_json(const ReferencePass& pass, const std::vector<MixClip>& clips);

}  // namespace serve_load
