// One client connection (Beast). Included only by connection.cc and listener.cc.
//
// Life of a request on a connection, all on the connection's strand:
//   reading     parse headers and body under the limits and the read deadline (idle_timeout until the first
//               byte, then read_timeout for the whole request, one second more per MiB of a declared body);
//               Expect: 100-continue is answered after the head passes check_head and its route's body limit, so a
//               refused upload is never sent. The body goes to a BodySpool: memory, then a temporary file
//   dispatched  the handler has the request; a one-shot read watches the socket so that a client that goes
//               away sets the request's `cancelled` flag (bytes of a pipelined next request are kept)
//   writing     the response, under write_timeout; then back to reading (keep-alive) or a lingering close
// Errors found by the transport (408, 413, 431, malformed HTTP) are answered and the connection closed, after
// reading and discarding what the client still sends for a moment so that it sees the answer, not a reset.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "spool_body.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "listener.h"

namespace steno::serve::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

class Connection;

// State shared by the acceptor and every connection: options, the handler, the drain flag, the live set.
struct ConnectionHost {
  ConnectionHost(const TransportOptions& o, RequestHandler& h) : options(o), handler(h) {}
  const TransportOptions& options;
  RequestHandler& handler;
  std::atomic<bool> draining{false};
  std::atomic<uint64_t> next_request{1};

  std::mutex mu;
  std::condition_variable changed;                           // notified when a connection goes away
  std::unordered_map<Connection*, std::weak_ptr<Connection>> live;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, ConnectionHost& host);
  ~Connection();  // leaves host.live

  void start();        // begins reading; called once, after registering in host.live
  void drain();        // thread-safe: close now if idle, else after the request in progress is answered
  void force_close();  // thread-safe: close now, whatever the state

  // From any thread, through a Responder: the response to request number `seq`. Stale or late ones are dropped.
  // A streamed response: deliver_begin (head and first bytes), deliver_more, then deliver (the last bytes).
  void deliver(uint64_t seq, HttpResponse response);
  void deliver_begin(uint64_t seq, HttpResponse head);
  void deliver_more(uint64_t seq, std::string bytes);

 private:
  enum class State { kReading, kDispatched, kWriting, kClosed };

  void read_request();
  void read_some();
  void parse_buffered();
  void on_read(boost::system::error_code ec, size_t bytes);
  void on_read_error(boost::system::error_code ec);
  void on_head();
  bool check_body_start();
  void refuse_body();  // 413 naming the route's body limit and its setting
  void on_request();
  void watch_peer();
  void on_watch(boost::system::error_code ec, size_t bytes);
  void on_deliver(uint64_t seq, HttpResponse response);
  void write(HttpResponse response, bool close_after);
  // A streamed response (chunked transfer coding, then Connection: close): the head, then the queued parts in
  // order; a client that stops reading (write_timeout, or kMaxStreamBacklog bytes not taken) is dropped and its
  // request cancelled.
  void on_begin(uint64_t seq, HttpResponse head);
  void on_more(uint64_t seq, std::string bytes);
  void stream_next();
  void fail_request(int status, const std::string& message);
  void linger_close();
  void linger_read();
  void close();
  void arm_timer(std::chrono::milliseconds after);
  void cancel_timer();

  tcp::socket socket_;
  net::steady_timer timer_;
  ConnectionHost& host_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<SpoolBody>> parser_;
  std::string remote_;
  BodyLimit body_limit_;  // of the request being read: its route's (known once its head is in)

  State state_ = State::kReading;
  uint64_t seq_ = 0;           // the request being read or served
  uint64_t timer_gen_ = 0;     // expirations of older arms are ignored
  bool got_bytes_ = false;     // the current request has begun to arrive
  bool head_done_ = false;
  bool body_start_checked_ = false;  // check_body_start ran (or the body is too small to need it)
  bool timed_out_ = false;
  bool watching_ = false;      // a watch read is pending
  bool peer_gone_ = false;
  bool keep_alive_ = true;
  std::string request_id_;                // of the request being read or served (X-Request-Id)
  HttpRequest head_;                       // the request being read (headers; body comes at the end)
  std::optional<HttpResponse> pending_;    // a delivered response waiting for the watch read to stop
  std::shared_ptr<std::atomic<bool>> cancelled_;
  // A streamed response in progress (on_begin .. its end).
  bool streaming_ = false;
  bool stream_writing_ = false;  // a write of the head or a part is under way
  bool stream_ended_ = false;    // the last part is queued
  std::deque<std::string> stream_parts_;
  size_t stream_backlog_ = 0;    // bytes queued, not yet written
  std::unique_ptr<std::array<char, 16384>> linger_buffer_;
  std::shared_ptr<Connection> self_;       // keeps a dispatched connection alive until it is answered or closed
};

}  // namespace steno::serve::http
