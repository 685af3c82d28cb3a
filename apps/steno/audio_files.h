// What the file-processing commands (transcribe, diarize) share: decoding their inputs up front, so that a bad
// file fails alone and the rest can be sorted by length into tight batches, and a progress line for long jobs.
#pragma once

#include <string>
#include <vector>

#include "steno/audio/decode.h"

namespace steno::cli {

struct InputFile {
  std::string path;
  std::vector<float> samples;         // mono at the requested rate; empty when `error` is set
  std::vector<std::string> warnings;  // decoded with a problem, e.g. truncated
  std::string error;                  // empty when decoded
  double decode_ms = 0;
};

// Decodes every file to mono at `sample_rate`, each within `limits`.
std::vector<InputFile> decode_files(const std::vector<std::string>& paths, const audio::AudioLimits& limits,
                                    int sample_rate);

// The decoded files' audio in seconds, all together.
double total_seconds(const std::vector<InputFile>& files, int sample_rate);

// Indices of the decoded files, shortest first (stable).
std::vector<size_t> by_length(const std::vector<InputFile>& files);

// A one-line progress report on stderr when it is a terminal and there is more than one unit ("files", "pieces").
void show_progress(size_t done, size_t total, double audio_s, double wall_s, const char* units = "files");

// Prints each file's warnings and error to stderr; returns how many failed.
int report_file_problems(const std::vector<InputFile>& files);

}  // namespace steno::cli
