#include "audio_files.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "steno/core/error.h"

namespace steno::cli {

std::vector<InputFile> decode_files(const std::vector<std::string>& paths, const audio::AudioLimits& limits,
                                    int sample_rate) {
  std::vector<InputFile> files(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    InputFile& f = files[i];
    f.path = paths[i];
    const auto t0 = std::chrono::steady_clock::now();
    try {
      audio::DecodedAudio a = audio::load_audio_file(paths[i], limits);
      if (a.sample_rate != sample_rate)
        fail(ErrorCode::kInternal, "decoded audio is {} Hz, the model wants {}", a.sample_rate, sample_rate);
      f.samples = std::move(a.samples);
      f.warnings = std::move(a.warnings);
    } catch (const Error& e) {
      f.error = e.what();
    }
    f.decode_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  return files;
}

double total_seconds(const std::vector<InputFile>& files, int sample_rate) {
  double seconds = 0;
  for (const InputFile& f : files) seconds += static_cast<double>(f.samples.size()) / sample_rate;
  return seconds;
}

std::vector<size_t> by_length(const std::vector<InputFile>& files) {
  std::vector<size_t> order;
  for (size_t i = 0; i < files.size(); ++i)
    if (files[i].error.empty()) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return files[a].samples.size() < files[b].samples.size(); });
  return order;
}

void show_progress(size_t done, size_t total, double audio_s, double wall_s, const char* units) {
  if (total < 2 || !isatty(STDERR_FILENO)) return;
  std::fprintf(stderr, "\r%zu/%zu %s, %.1f s of audio, RTFx %.1f   ", done, total, units, audio_s,
               wall_s > 0 ? audio_s / wall_s : 0.0);
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

int report_file_problems(const std::vector<InputFile>& files) {
  int failures = 0;
  for (const InputFile& f : files) {
    for (const auto& w : f.warnings) std::fprintf(stderr, "steno: %s: warning: %s\n", f.path.c_str(), w.c_str());
    if (!f.error.empty()) {
      ++failures;
      std::fprintf(stderr, "steno: %s: %s\n", f.path.c_str(), f.error.c_str());
    }
  }
  return failures;
}

}  // namespace steno::cli
