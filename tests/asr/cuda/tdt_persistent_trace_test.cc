// The persistent decoder's trace summary (a developer's measuring aid) on stamps made up here: the phases'
// work, the slowest block's, and the barrier waits come out as the stamps say.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tdt_persistent_kernel.h"
#include "tdt_persistent_trace.h"

namespace steno::asr::detail {
namespace {

namespace kern = cuda_tdt;

// Block b of two: start, then one iteration of logits (work 10 + b * 10 cycles, then a barrier wait of
// 40 - b * 10), decide (5), lstm 0 (20, wait 6).
std::vector<uint64_t> two_blocks(int cap) {
  std::vector<uint64_t> t(2 * static_cast<size_t>(cap), 0);
  for (int b = 0; b < 2; ++b) {
    uint64_t now = 1000;
    std::vector<uint64_t> stamps;
    auto at = [&](uint64_t dt, uint32_t tag) {
      now += dt;
      stamps.push_back(now << 8 | tag);
    };
    at(0, kern::kTraceStart);
    at(3, kern::kTraceBarrier);
    at(10 + 10 * b, kern::kTraceLogits);
    at(40 - 10 * b, kern::kTraceBarrier);
    at(5, kern::kTraceDecide);
    at(20, kern::kTraceLstm0);
    at(6, kern::kTraceBarrier);
    uint64_t* e = t.data() + static_cast<size_t>(b) * cap;
    e[0] = stamps.size();
    for (size_t i = 0; i < stamps.size(); ++i) e[1 + i] = stamps[i];
  }
  return t;
}

TEST(PersistentTrace, SummarizesWorkAndWaitsPerPhase) {
  const int cap = 16;
  const std::vector<uint64_t> t = two_blocks(cap);
  // At 1 MHz a cycle is a µs.
  const std::string s = summarize_persistent_trace(t.data(), 2, cap, 1.0);
  // logits: work mean 15, slowest 20; waits 40 and 30: mean 35, min 30.
  EXPECT_NE(s.find("logits            1      15.00      20.00      35.00      30.00"), std::string::npos) << s;
  EXPECT_NE(s.find("decide            1       5.00       5.00       0.00       0.00"), std::string::npos) << s;
  EXPECT_NE(s.find("lstm 0            1      20.00      20.00       6.00       6.00"), std::string::npos) << s;
  // Per iteration: slowest work + shortest wait of each phase: (20 + 30) + 5 + (20 + 6).
  EXPECT_NE(s.find("per iteration: 81.00"), std::string::npos) << s;
}

TEST(PersistentTrace, StopsAtTheEntriesWritten) {
  const int cap = 16;
  std::vector<uint64_t> t = two_blocks(cap);
  t[0] = 3;  // block 0 recorded start, barrier, logits only
  t[cap] = 3;
  const std::string s = summarize_persistent_trace(t.data(), 2, cap, 1.0);
  EXPECT_EQ(s.find("decide"), std::string::npos) << s;
  EXPECT_NE(s.find("logits            1      15.00      20.00       0.00       0.00"), std::string::npos) << s;
}

}  // namespace
}  // namespace steno::asr::detail
