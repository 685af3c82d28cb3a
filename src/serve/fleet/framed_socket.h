// wire.h's frames over one end of a Unix stream socket, with a file descriptor passed beside a frame (SCM_RIGHTS)
// for the batch's shared memory. Non-blocking underneath: every wait has a bound, so a peer that stops reading or
// writing (a SIGSTOPped worker) cannot block the other side forever.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "steno/core/unique_fd.h"
#include "serve/fleet/wire.h"

namespace steno::serve::fleet {

// The other end closed the connection (EOF, or a reset): the peer process is gone or gave up.
class PeerClosed : public Error {
 public:
  explicit PeerClosed(const std::string& message) : Error(ErrorCode::kUnavailable, message) {}
};

class FramedSocket {
 public:
  // `max_incoming_payload`: the largest payload accepted from the peer (wire.h's limits).
  FramedSocket(UniqueFd fd, uint32_t max_incoming_payload);

  // Sends the whole frame; `attach_fd` (when >= 0) travels with it. Thread-safe (the worker's heartbeat thread
  // and batch loop both send). Throws PeerClosed when the peer is gone, kUnavailable when it has not made room
  // within `timeout`.
  void send(const Message& message, int attach_fd = -1, std::chrono::milliseconds timeout = std::chrono::seconds(10));

  struct Received {
    Message message;
    UniqueFd fd;  // the descriptor that came with the frame, if any
  };
  // The next message, waiting at most `timeout` (negative: without limit); nullopt when none came in time.
  // Throws PeerClosed at EOF and ProtocolError for a malformed frame or a descriptor the protocol does not allow
  // with it (a RunBatch must carry one, a Hello may, no other message can). Not thread-safe: one reader.
  std::optional<Received> receive(std::chrono::milliseconds timeout);

  int fd() const { return fd_.get(); }

 private:
  // One recvmsg: appends the bytes to buffer_ and the descriptors to fds_. False when nothing is ready.
  bool read_some();
  std::optional<Received> take_frame();

  UniqueFd fd_;
  uint32_t max_incoming_payload_;
  std::string buffer_;         // received bytes not yet taken as a frame
  std::vector<UniqueFd> fds_;  // received descriptors not yet given out
  std::mutex send_mu_;
};

}  // namespace steno::serve::fleet
