// Offline batching by length (asr/length_batches.h): the planner's cut is the cheapest under its cost model
// (checked against every cut of small inputs), keeps its bounds, and beats fixed counts on the benchmark's mix.
#include "steno/asr/length_batches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "../../bench/mix_workload.h"
#include "steno/core/error.h"

namespace steno::asr {
namespace {

constexpr int kRate = 16000;

std::vector<int64_t> seconds_to_samples(const std::vector<double>& seconds) {
  std::vector<int64_t> out;
  for (double s : seconds) out.push_back(std::llround(s * kRate));
  return out;
}

void expect_partition(const std::vector<BatchRange>& batches, size_t clips) {
  size_t next = 0;
  for (const BatchRange& b : batches) {
    EXPECT_EQ(b.begin, next);
    EXPECT_LT(b.begin, b.end);
    next = b.end;
  }
  EXPECT_EQ(next, clips);
}

// The least cost over every cut into consecutive batches within the bounds (2^(n-1) cuts).
double brute_force_best(const std::vector<int64_t>& lengths, const LengthBatching& batching) {
  const size_t n = lengths.size();
  double best = INFINITY;
  for (uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
    std::vector<BatchRange> batches;
    size_t begin = 0;
    bool ok = true;
    for (size_t i = 1; i <= n; ++i) {
      if (i < n && !(cuts >> (i - 1) & 1u)) continue;
      const double padded = static_cast<double>(i - begin) * static_cast<double>(lengths[i - 1]) / kRate;
      if (static_cast<int>(i - begin) > batching.max_batch ||
          (i - begin > 1 && batching.max_padded_seconds > 0 && padded > batching.max_padded_seconds))
        ok = false;
      batches.push_back({begin, i});
      begin = i;
    }
    if (ok) best = std::min(best, batches_cost_ms(lengths, kRate, batches, batching.cost));
  }
  return best;
}

TEST(LengthBatches, TheCutIsTheCheapestOfAllCutsOnSmallInputs) {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> length(std::log(6.0), 0.8);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t n = 2 + trial % 11;
    std::vector<double> s;
    for (size_t i = 0; i < n; ++i) s.push_back(std::clamp(length(rng), 0.5, 40.0));
    std::sort(s.begin(), s.end());
    const auto lengths = seconds_to_samples(s);
    LengthBatching b;
    b.max_batch = 1 + trial % 5;
    b.max_padded_seconds = trial % 3 == 0 ? 0 : 60;
    b.cost.per_batch_ms = trial % 4 == 0 ? 0.0 : 2.0 + trial % 3;
    const auto plan = plan_length_batches(lengths, kRate, b);
    expect_partition(plan, n);
    EXPECT_NEAR(batches_cost_ms(lengths, kRate, plan, b.cost), brute_force_best(lengths, b), 1e-9) << "trial " << trial;
  }
}

TEST(LengthBatches, KeepsTheCountAndPaddedSizeBounds) {
  const auto lengths = [] {
    auto l = bench_workload::mix_lengths_as_drawn(kRate);
    std::sort(l.begin(), l.end());
    return l;
  }();
  LengthBatching b;
  b.max_batch = 100;
  b.max_padded_seconds = 900;
  const auto plan = plan_length_batches(lengths, kRate, b);
  expect_partition(plan, lengths.size());
  for (const BatchRange& r : plan) {
    EXPECT_LE(r.size(), 100u);
    EXPECT_LE(static_cast<double>(r.size()) * static_cast<double>(lengths[r.end - 1]) / kRate, 900.0);
  }
}

TEST(LengthBatches, ALongClipOverThePaddedBoundRunsAlone) {
  const auto lengths = seconds_to_samples({2, 2, 50, 60});
  LengthBatching b;
  b.max_padded_seconds = 40;
  const auto plan = plan_length_batches(lengths, kRate, b);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].size(), 2u);
  EXPECT_EQ(plan[1].size(), 1u);
  EXPECT_EQ(plan[2].size(), 1u);
}

TEST(LengthBatches, EqualLengthsFillTheLargestBatches) {
  const std::vector<int64_t> lengths(1000, 10 * kRate);
  LengthBatching b;
  b.max_batch = 256;
  const auto plan = plan_length_batches(lengths, kRate, b);
  EXPECT_EQ(plan.size(), 4u);  // ceil(1000 / 256): with equal lengths only the fixed cost differs between cuts
  EXPECT_DOUBLE_EQ(padding_waste(lengths, plan), 0.0);
}

// The benchmark's mix (1,000 log-normal lengths, 1.3-35 s): against the fixed counts it used to run at, the cut
// costs less under the model, and pads half as much as batches of 128 (batches of 64 pad about as little, at
// twice the batches).
TEST(LengthBatches, OnTheMixCostsLessAndPadsLessThanFixedCounts) {
  auto lengths = bench_workload::mix_lengths_as_drawn(kRate);
  std::sort(lengths.begin(), lengths.end());
  const LengthBatching b;
  const auto plan = plan_length_batches(lengths, kRate, b);
  expect_partition(plan, lengths.size());
  for (size_t count : {64u, 128u}) {
    std::vector<BatchRange> fixed;
    for (size_t i = 0; i < lengths.size(); i += count) fixed.push_back({i, std::min(lengths.size(), i + count)});
    EXPECT_LT(batches_cost_ms(lengths, kRate, plan, b.cost), batches_cost_ms(lengths, kRate, fixed, b.cost));
    if (count == 128) {
      EXPECT_LT(padding_waste(lengths, plan), 0.6 * padding_waste(lengths, fixed));
    }
  }
  EXPECT_LT(padding_waste(lengths, plan), 0.15);
}

TEST(LengthBatches, RefusesUnsortedInputAndBadBounds) {
  EXPECT_THROW(plan_length_batches(seconds_to_samples({3, 2}), kRate), Error);
  LengthBatching b;
  b.max_batch = 0;
  EXPECT_THROW(plan_length_batches(seconds_to_samples({1}), kRate, b), Error);
  b = {};
  b.cost.per_padded_second_ms = -1;
  EXPECT_THROW(plan_length_batches(seconds_to_samples({1}), kRate, b), Error);
  EXPECT_TRUE(plan_length_batches({}, kRate).empty());
}

}  // namespace
}  // namespace steno::asr
