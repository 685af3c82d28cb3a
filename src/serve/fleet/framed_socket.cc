#include "serve/fleet/framed_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace steno::serve::fleet {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for `events` on fd until `deadline` (max: without limit). False on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
    }
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, timeout_ms);
    if (n > 0) return true;  // readable, writable, or an error/hang-up the next call reports
    if (n < 0 && errno != EINTR) fail(ErrorCode::kUnavailable, "poll on the worker socket: {}", std::strerror(errno));
    if (n == 0 && deadline != Clock::time_point::max() && Clock::now() >= deadline) return false;
  }
}

Clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  return timeout.count() < 0 ? Clock::time_point::max() : Clock::now() + timeout;
}

// How many descriptors a frame of type `t` may come with: a RunBatch its PCM's, exactly; a Hello the shared
// weights' (--share-weights), optionally; nothing else any.
struct FdRule {
  size_t min, max;
};
FdRule fd_rule(MessageType t) {
  if (t == MessageType::kRunBatch) return {1, 1};
  if (t == MessageType::kHello) return {0, 1};
  return {0, 0};
}

}  // namespace

FramedSocket::FramedSocket(UniqueFd fd, uint32_t max_incoming_payload)
    : fd_(std::move(fd)), max_incoming_payload_(max_incoming_payload) {
  STENO_CHECK(fd_.valid(), "FramedSocket needs an open socket");
  const int flags = ::fcntl(fd_.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd_.get(), F_SETFL, flags | O_NONBLOCK) < 0)
    fail(ErrorCode::kUnavailable, "cannot make the worker socket non-blocking: {}", std::strerror(errno));
}

void FramedSocket::send(const Message& message, int attach_fd, std::chrono::milliseconds timeout) {
  const std::string frame = encode_frame(message);
  const Clock::time_point deadline = deadline_after(timeout);
  std::lock_guard lock(send_mu_);
  size_t sent = 0;
  bool fd_sent = attach_fd < 0;
  while (sent < frame.size()) {
    iovec iov{const_cast<char*>(frame.data() + sent), frame.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control{};
    if (!fd_sent) {
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &attach_fd, sizeof(int));
    }
    const ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      fd_sent = true;  // the descriptor goes with the first byte
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd_.get(), POLLOUT, deadline))
        fail(ErrorCode::kUnavailable, "the peer did not read a {} frame within {} ms",
             message_type_name(type_of(message)), timeout.count());
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) throw PeerClosed("the peer closed the connection");
    fail(ErrorCode::kUnavailable, "sending a {} frame: {}", message_type_name(type_of(message)),
         n < 0 ? std::strerror(errno) : "no progress");
  }
}

bool FramedSocket::read_some() {
  // 64 KiB at a time: with the header checked as soon as it is in, buffer_ never holds more than one frame of
  // the allowed size plus one chunk.
  std::array<char, 64 * 1024> chunk;
  iovec iov{chunk.data(), chunk.size()};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 4)> control{};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  const ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
    if (errno == ECONNRESET) throw PeerClosed("the peer reset the connection");
    fail(ErrorCode::kUnavailable, "reading the worker socket: {}", std::strerror(errno));
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds_.emplace_back(received);  // owned now, closed on any error below
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) || fds_.size() > 1) throw ProtocolError("too many descriptors sent with one frame");
  if (n == 0) throw PeerClosed("the peer closed the connection");
  buffer_.append(chunk.data(), static_cast<size_t>(n));
  return true;
}

std::optional<FramedSocket::Received> FramedSocket::take_frame() {
  if (buffer_.size() < kHeaderBytes) return std::nullopt;
  const FrameHeader h = decode_header(std::string_view(buffer_).substr(0, kHeaderBytes), max_incoming_payload_);
  if (buffer_.size() < kHeaderBytes + h.payload_bytes) return std::nullopt;
  Received r{decode_payload(h.type, std::string_view(buffer_).substr(kHeaderBytes, h.payload_bytes)), UniqueFd()};
  buffer_.erase(0, kHeaderBytes + h.payload_bytes);
  const FdRule rule = fd_rule(h.type);
  if (fds_.size() < rule.min)
    throw ProtocolError(fmt::format("a {} frame needs one descriptor, got {}", message_type_name(h.type), fds_.size()));
  if (fds_.size() > rule.max)
    throw ProtocolError(fmt::format("a {} frame came with a descriptor", message_type_name(h.type)));
  if (!fds_.empty()) {
    r.fd = std::move(fds_.front());
    fds_.clear();
  }
  return r;
}

std::optional<FramedSocket::Received> FramedSocket::receive(std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = deadline_after(timeout);
  for (;;) {
    if (auto frame = take_frame()) return frame;
    if (read_some()) continue;
    if (!wait_for(fd_.get(), POLLIN, deadline)) return std::nullopt;
  }
}

}  // namespace steno::serve::fleet
