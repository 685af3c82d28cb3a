#include "steno/asr/length_batches.h"

#include <algorithm>
#include <limits>

#include "steno/core/error.h"

namespace steno::asr {

double BatchCostModel::cost_ms(int64_t count, double longest_seconds) const {
  const double padded = static_cast<double>(count) * longest_seconds;
  return per_batch_ms + per_longest_second_ms * longest_seconds +
         padded * (per_padded_second_ms + per_padded_second_per_second_ms * longest_seconds);
}

void LengthBatching::validate() const {
  STENO_CHECK(max_batch >= 1, "max_batch must be >= 1, got {}", max_batch);
  STENO_CHECK(max_padded_seconds >= 0, "max_padded_seconds must be >= 0, got {}", max_padded_seconds);
  STENO_CHECK(cost.per_batch_ms >= 0 && cost.per_longest_second_ms >= 0 && cost.per_padded_second_ms >= 0 &&
                  cost.per_padded_second_per_second_ms >= 0,
              "the batch cost model's terms must be >= 0");
}

std::vector<BatchRange> plan_length_batches(std::span<const int64_t> sorted_samples, int sample_rate,
                                            const LengthBatching& batching) {
  batching.validate();
  STENO_CHECK(sample_rate > 0, "sample rate must be > 0, got {}", sample_rate);
  STENO_CHECK(std::is_sorted(sorted_samples.begin(), sorted_samples.end()), "clip lengths must be sorted ascending");
  STENO_CHECK(sorted_samples.empty() || sorted_samples.front() >= 0, "clip lengths must be >= 0");
  const size_t n = sorted_samples.size();
  const auto seconds = [&](size_t i) { return static_cast<double>(sorted_samples[i]) / sample_rate; };

  // best[j]: the least cost of the first j clips; from[j]: where the last batch of that cut begins. The last
  // batch of clips [i, j) is padded to clip j - 1 (the longest), so the batches are consecutive in the order.
  std::vector<double> best(n + 1, std::numeric_limits<double>::infinity());
  std::vector<size_t> from(n + 1, 0);
  best[0] = 0;
  for (size_t j = 1; j <= n; ++j) {
    const double longest = seconds(j - 1);
    const size_t widest = std::min(j, static_cast<size_t>(batching.max_batch));
    for (size_t count = 1; count <= widest; ++count) {
      const bool fits = batching.max_padded_seconds == 0 ||
                        static_cast<double>(count) * longest <= batching.max_padded_seconds;
      if (count > 1 && !fits) break;  // larger batches only grow: a single clip always gets its own batch
      const size_t i = j - count;
      const double c = best[i] + batching.cost.cost_ms(static_cast<int64_t>(count), longest);
      if (c < best[j]) {
        best[j] = c;
        from[j] = i;
      }
    }
  }
  std::vector<BatchRange> out;
  for (size_t j = n; j > 0; j = from[j]) out.push_back({from[j], j});
  std::reverse(out.begin(), out.end());
  return out;
}

namespace {

// The batch's clips, checked to lie within the sorted list.
std::span<const int64_t> clips_of(std::span<const int64_t> sorted_samples, const BatchRange& b) {
  STENO_CHECK(b.begin < b.end && b.end <= sorted_samples.size(), "batch [{}, {}) is not within {} clips", b.begin,
              b.end, sorted_samples.size());
  return sorted_samples.subspan(b.begin, b.size());
}

int64_t longest_of(std::span<const int64_t> clips) { return *std::max_element(clips.begin(), clips.end()); }

}  // namespace

double batches_cost_ms(std::span<const int64_t> sorted_samples, int sample_rate, std::span<const BatchRange> batches,
                       const BatchCostModel& cost) {
  double total = 0;
  for (const BatchRange& b : batches)
    total += cost.cost_ms(static_cast<int64_t>(b.size()),
                          static_cast<double>(longest_of(clips_of(sorted_samples, b))) / sample_rate);
  return total;
}

double padding_waste(std::span<const int64_t> sorted_samples, std::span<const BatchRange> batches) {
  double real = 0, padded = 0;
  for (const BatchRange& b : batches) {
    const std::span<const int64_t> clips = clips_of(sorted_samples, b);
    for (const int64_t n : clips) real += static_cast<double>(n);
    padded += static_cast<double>(longest_of(clips)) * static_cast<double>(clips.size());
  }
  return padded == 0 ? 0.0 : 1.0 - real / padded;
}

}  // namespace steno::asr
