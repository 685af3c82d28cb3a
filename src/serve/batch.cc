#include "serve/batch.h"

#include <algorithm>
#include <iterator>

namespace steno::serve {

double padding_waste(std::span<const int64_t> lengths) {
  int64_t longest = 0, total = 0;
  for (int64_t n : lengths) {
    longest = std::max(longest, n);
    total += n;
  }
  if (longest == 0) return 0;
  return 1.0 - static_cast<double>(total) / (static_cast<double>(longest) * static_cast<double>(lengths.size()));
}

namespace {

void update_padding_waste(Batch& b) {
  std::vector<int64_t> lengths;
  lengths.reserve(b.requests.size());
  for (const auto& r : b.requests) lengths.push_back(static_cast<int64_t>(r->pcm.size()));
  b.padding_waste = padding_waste(lengths);
}

}  // namespace

Batch split_front(Batch& batch, size_t n) {
  n = std::min(n, batch.requests.size());
  Batch front;
  front.formed = batch.formed;
  const auto req_end = batch.requests.begin() + static_cast<std::ptrdiff_t>(n);
  const auto enq_end = batch.enqueued.begin() + static_cast<std::ptrdiff_t>(n);
  front.requests.assign(std::make_move_iterator(batch.requests.begin()), std::make_move_iterator(req_end));
  front.enqueued.assign(batch.enqueued.begin(), enq_end);
  batch.requests.erase(batch.requests.begin(), req_end);
  batch.enqueued.erase(batch.enqueued.begin(), enq_end);
  update_padding_waste(front);
  update_padding_waste(batch);
  return front;
}

double audio_seconds(const Batch& batch) {
  double samples = 0;
  for (const auto& r : batch.requests) samples += static_cast<double>(r->pcm.size());
  return samples / kPcmSampleRate;
}

}  // namespace steno::serve
