// A batch of requests: what the batcher cuts and an executor runs. Owned by exactly one party at a time (the
// batcher's queue, then the executor pool running it), so every request in it is completed exactly once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "serve/request.h"

namespace steno::serve {

// A batch cut from the queue, owned by the executor that runs it.
struct Batch {
  std::vector<std::unique_ptr<TranscriptionRequest>> requests;
  std::vector<Clock::time_point> enqueued;  // when each request entered the queue (its queue time starts there)
  Clock::time_point formed;
  double padding_waste = 0;
};

// 1 - sum / (n x max) of the clip lengths; 0 for an empty batch or all-empty clips.
double padding_waste(std::span<const int64_t> lengths);

// Moves the first `n` requests of `batch` (with their queue times) into a batch of their own; both keep `formed`
// and get their own padding waste. Executors split batches to retry them smaller.
Batch split_front(Batch& batch, size_t n);

// The seconds of audio the batch holds.
double audio_seconds(const Batch& batch);

}  // namespace steno::serve
