// A batch's PCM in shared memory: the server copies every clip into one memfd and passes the descriptor with the
// RunBatch frame (framed_socket.h); the worker maps it read-only and transcribes the clips in place, so megabytes
// of audio never go through the socket.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "steno/core/unique_fd.h"
#include "serve/fleet/wire.h"

namespace steno::serve::fleet {

class SharedPcm {
 public:
  // Server side: the clips, one after another, in a new memfd; `spans` receives where each lies (faults unset).
  static SharedPcm create(const std::vector<std::span<const float>>& clips, std::vector<ClipSpan>* spans);
  // Worker side: maps `fd` read-only. Throws ProtocolError when a span does not lie inside it.
  static SharedPcm map(UniqueFd fd, const std::vector<ClipSpan>& spans);

  SharedPcm(SharedPcm&& o) noexcept;
  SharedPcm& operator=(SharedPcm&&) = delete;
  ~SharedPcm();

  int fd() const { return fd_.get(); }
  // A clip checked by map() (or written by create()).
  std::span<const float> clip(const ClipSpan& s) const;

 private:
  SharedPcm(UniqueFd fd, void* base, size_t bytes) : fd_(std::move(fd)), base_(base), bytes_(bytes) {}
  UniqueFd fd_;
  void* base_ = nullptr;  // null when the batch holds no samples at all
  size_t bytes_ = 0;
};

}  // namespace steno::serve::fleet
