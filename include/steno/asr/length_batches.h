// Offline batching: clips sorted by length cut into consecutive batches of the least total cost under a model of
// what a batch costs on the device, within a count bound and a padded-size (memory) bound.
//
// Why not a fixed count: a batch is computed at its longest clip's length, so a fixed count of sorted clips pads
// the long tail heavily (the benchmark's `mix` in batches of 128: the last batch runs clips of 13.9 to 35 s all
// at 35 s; a third of the encoder's work is padding and attention, quadratic in length, does 2.2x what it needs).
// Why not a padding bound alone (the server's batcher): short clips differ the most relative to their length, so
// a bound of a few percent cuts them into batches too small to fill the GPU, and every batch has a fixed cost
// (launches, the decoder's loop over the longest clip's frames). The cost model weighs both; a dynamic program
// finds the best cut exactly (O(clips x max_batch)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace steno::asr {

// A batch's time on the device, in ms, from its clip count and its longest clip (every clip padded to it).
// The defaults are the 0.6B model's in bf16 on an H200 (bench/results, end_to_end and decoder benchmarks): ~3 ms
// of fixed cost a batch (the encoder at 1 x 45 s is launch-bound: 5.1 ms for ~2 ms of work), the decoder's
// loop ~0.3 ms per second of the longest clip (its frames are the steps), the encoder ~37 µs per padded audio
// second plus attention's growth with length (45 µs a second at 45 s against 38.5 at 10 s). The same model serves
// batches run by two or three lanes at once: a model that took their overlap as making batches nearly free (0.75
// ms a batch, 0.05 ms per longest second) cut more, smaller batches and lost (bench/results/h200-mix-planned).
struct BatchCostModel {
  double per_batch_ms = 3.0;
  double per_longest_second_ms = 0.3;
  double per_padded_second_ms = 0.0366;
  double per_padded_second_per_second_ms = 0.000186;  // x count x longest^2: attention
  double cost_ms(int64_t count, double longest_seconds) const;
};

struct LengthBatching {
  int max_batch = 256;
  // Bound on count x longest in seconds, what the batch's activations scale with; 0: none. A clip longer than
  // the bound gets a batch of its own.
  double max_padded_seconds = 4800;
  BatchCostModel cost;
  void validate() const;  // throws steno::Error(kInvalidArgument) naming the bad field
};

struct BatchRange {
  size_t begin = 0, end = 0;  // clips [begin, end) of the sorted lengths
  size_t size() const { return end - begin; }
};

// The cheapest cut of `sorted_samples` (clip lengths in samples at `sample_rate`, ascending; throws
// kInvalidArgument otherwise) into consecutive batches within the bounds. Empty input: no batches.
std::vector<BatchRange> plan_length_batches(std::span<const int64_t> sorted_samples, int sample_rate,
                                            const LengthBatching& batching = {});

// The modelled cost of a cut (ms): the sum of its batches' costs.
double batches_cost_ms(std::span<const int64_t> sorted_samples, int sample_rate, std::span<const BatchRange> batches,
                       const BatchCostModel& cost);

// The share of a cut's padded samples that is padding: 1 - real / sum(count x longest).
double padding_waste(std::span<const int64_t> sorted_samples, std::span<const BatchRange> batches);

}  // namespace steno::asr
