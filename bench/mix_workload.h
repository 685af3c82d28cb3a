// The benchmark protocol's `mix` workload (docs/benchmarks.md) and how benchmark clips are cut from
// the test speech, shared by the engine benchmark (bench/cuda_engine_bench.cc: `offline`, the lengths sorted) and the
// serving benchmark (serve_load --open-loop: the lengths in this generator's order), so that both send the same
// lengths, cut the same way. Header-only, standard library only: neither program links more for it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace steno::bench_workload {

inline constexpr uint64_t kMixSeed = 20240501;
inline constexpr int kMixClips = 1000;
inline constexpr double kClipOffsetSeconds = 7.0;  // clip i starts i * 7 s into the speech stream

// The `mix` lengths in samples at `sample_rate`, in the order drawn (a random order; the offline workload sorts
// them): 1,000 log-normal lengths around a 5.8 s median (sigma 0.7 gives the protocol's mean of about 7.4 s),
// clipped to [1.3, 35] s, from a fixed seed.
inline std::vector<int64_t> mix_lengths_as_drawn(int sample_rate) {
  std::mt19937_64 rng(kMixSeed);
  std::vector<int64_t> out;
  for (int i = 0; i < kMixClips; ++i) {
    // Box-Muller from two 53-bit uniforms (std::normal_distribution differs between standard libraries).
    const double u1 = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53, u2 = (rng() >> 11) * 0x1.0p-53;
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    const double seconds = std::clamp(5.8 * std::exp(0.7 * z), 1.3, 35.0);
    out.push_back(std::llround(seconds * sample_rate));
  }
  return out;
}

// Where clip `index` starts in a speech stream of `stream_samples`: clip i of n samples is
// stream[(clip_start(i) + k) mod stream_samples] for k < n (the stream wraps around).
inline int64_t clip_start(int64_t index, int64_t stream_samples, int sample_rate) {
  return (index * static_cast<int64_t>(kClipOffsetSeconds * sample_rate)) % stream_samples;
}

}  // namespace steno::bench_workload
