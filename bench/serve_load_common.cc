#include "serve_load_common.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace serve_load {

namespace {

void put_le(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

double nearest_rank(std::vector<double> sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

double round3(double v) { return std::round(v * 1000) / 1000; }

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::filesystem::path> flac_files(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".flac") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error("no .flac files in " + dir);
  return files;
}

std::string wav_pcm16(const std::vector<float>& samples, int sample_rate) {
  const uint32_t data_bytes = static_cast<uint32_t>(samples.size() * 2);
  std::string wav = "RIFF";
  wav.reserve(44 + data_bytes);
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
  return wav;
}

Json raise_nofile(int needed) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  Json j;
  const auto value = [](rlim_t v) { return v == RLIM_INFINITY ? int64_t{-1} : static_cast<int64_t>(v); };
  j["soft_before"] = value(lim.rlim_cur);
  j["hard"] = value(lim.rlim_max);
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
      std::fprintf(stderr, "serve_load: cannot raise RLIMIT_NOFILE to %llu: %s\n",
                   static_cast<unsigned long long>(lim.rlim_max), std::strerror(errno));
  }
  getrlimit(RLIMIT_NOFILE, &lim);
  j["soft"] = value(lim.rlim_cur);
  std::fprintf(stderr, "serve_load: RLIMIT_NOFILE soft %s -> %s (hard %s)\n", j["soft_before"].dump().c_str(),
               j["soft"].dump().c_str(), j["hard"].dump().c_str());
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < static_cast<rlim_t>(needed) + 64)
    std::fprintf(stderr,
                 "serve_load: WARNING: RLIMIT_NOFILE is %llu even after raising the soft limit to the hard one, too "
                 "low for %d connections (+ a few); raise the hard limit (ulimit -Hn, limits.conf) or use fewer "
                 "--requests. Connections beyond it fail with 'Too many open files'.\n",
                 static_cast<unsigned long long>(lim.rlim_cur), needed);
  return j;
}

Json latency_json(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  double mean = 0;
  for (double v : values) mean += v;
  if (!values.empty()) mean /= static_cast<double>(values.size());
  return {{"mean", mean},
          {"p50", nearest_rank(values, 50)},
          {"p90", nearest_rank(values, 90)},
          {"p95", nearest_rank(values, 95)},
          {"p99", nearest_rank(values, 99)},
          {"max", values.empty() ? 0 : values.back()},
          {"min", values.empty() ? 0 : values.front()}};
}

}  // namespace serve_load
