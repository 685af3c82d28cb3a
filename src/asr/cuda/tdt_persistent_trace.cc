#include "tdt_persistent_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "tdt_persistent_kernel.h"

namespace steno::asr::detail {

namespace {

namespace kern = cuda_tdt;

constexpr int kTags = kern::kTraceLstm0 + kern::kPersistentMaxLayers;

const char* tag_name(int tag) {
  switch (tag) {
    case kern::kTraceStart: return "start";
    case kern::kTraceLogits: return "logits";
    case kern::kTraceDecide: return "decide";
    case kern::kTracePred: return "pred+hidden";
    default: break;
  }
  static constexpr std::array<const char*, kern::kPersistentMaxLayers> kLstm = {"lstm 0", "lstm 1", "lstm 2",
                                                                                "lstm 3"};
  return tag >= static_cast<int>(kern::kTraceLstm0) && tag < kTags ? kLstm[tag - kern::kTraceLstm0] : "?";
}

// One occurrence of a phase in every block: its work and the barrier wait after it.
struct Occurrence {
  double work_sum = 0, work_max = 0;
  double wait_sum = 0, wait_min = std::numeric_limits<double>::max();
  int blocks = 0, waits = 0;
};

}  // namespace

std::string summarize_persistent_trace(const uint64_t* trace, int blocks, int cap, double clock_mhz) {
  // occurrences[tag][k]: the k-th time the phase ran (the same sequence in every block).
  std::array<std::vector<Occurrence>, kTags> occurrences;
  for (int b = 0; b < blocks; ++b) {
    const uint64_t* e = trace + static_cast<size_t>(b) * cap;
    const int n = static_cast<int>(std::min<uint64_t>(e[0], static_cast<uint64_t>(cap - 1)));
    std::array<size_t, kTags> seen{};
    Occurrence* last = nullptr;  // the phase whose barrier the next kTraceBarrier stamp ends
    for (int i = 1; i < n; ++i) {
      const auto tag = static_cast<int>(e[1 + i] & 0xff);
      const double cycles = static_cast<double>((e[1 + i] >> 8) - (e[i] >> 8));
      if (tag == kern::kTraceBarrier) {
        if (last != nullptr) {
          last->wait_sum += cycles;
          last->wait_min = std::min(last->wait_min, cycles);
          ++last->waits;
        }
        last = nullptr;
        continue;
      }
      if (tag >= kTags) continue;
      auto& list = occurrences[tag];
      if (list.size() <= seen[tag]) list.resize(seen[tag] + 1);
      Occurrence& o = list[seen[tag]++];
      o.work_sum += cycles;
      o.work_max = std::max(o.work_max, cycles);
      ++o.blocks;
      last = &o;
    }
  }
  const double us = 1.0 / clock_mhz;
  std::string out = fmt::format("{:<12} {:>6} {:>10} {:>10} {:>10} {:>10}   (µs at {:.0f} MHz)\n", "phase", "runs",
                                "work mean", "work max", "wait mean", "wait min", clock_mhz);
  double per_run_total = 0;
  for (int tag = 1; tag < kTags; ++tag) {
    const auto& list = occurrences[tag];
    if (list.empty()) continue;
    double work_mean = 0, work_max = 0, wait_mean = 0, wait_min = 0;
    int waited = 0;
    for (const Occurrence& o : list) {
      work_mean += o.work_sum / o.blocks;
      work_max += o.work_max;
      if (o.waits > 0) {
        wait_mean += o.wait_sum / o.waits;
        wait_min += o.wait_min;
        ++waited;
      }
    }
    const double runs = static_cast<double>(list.size());
    if (tag != kern::kTraceStart) per_run_total += work_max + (waited ? wait_min / waited * runs : 0.0);
    out += fmt::format("{:<12} {:>6} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n", tag_name(tag), list.size(),
                       work_mean / runs * us, work_max / runs * us, waited ? wait_mean / waited * us : 0.0,
                       waited ? wait_min / waited * us : 0.0);
  }
  const size_t iterations = occurrences[kern::kTraceDecide].size();
  if (iterations > 0)
    out += fmt::format("per iteration: {:.2f} µs (slowest block's work + shortest wait, summed over phases)\n",
                       per_run_total / static_cast<double>(iterations) * us);
  return out;
}

}  // namespace steno::asr::detail
