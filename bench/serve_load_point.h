// One point of a sweep, the event-loop side both loops (--closed-loop, --open-loop) share: the measurement window
// (warm-up, window, its wall-clock bounds, /metrics scraped at its start and end) and the keep-alive connections, each
// carrying one request at a time through the same cycle (deadline, connecting when needed, write, read).
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve_load_common.h"
#include "serve_load_http.h"
#include "serve_load_metrics.h"

namespace serve_load {

// A point's measurement window: --warmup-s from the point's start, then [opens, closes) for --duration-s. Its
// wall-clock bounds (Unix seconds, to line up GPU samples) and /metrics at its start and end, scraped on a thread of
// their own so that the event loop goes on meanwhile.
class MeasurementWindow {
 public:
  MeasurementWindow(net::io_context& ioc, const tcp::endpoint& ep, const Options& o);

  // The point starts now: the warm-up, then the window; `on_close` runs on the event loop once the window closed.
  void start(std::function<void()> on_close);
  // Once the event loop has run out: the point's end, both scrapes waited for.
  void finish();

  Clock::time_point started() const { return start_; }
  Clock::time_point opens() const { return opens_; }
  Clock::time_point closes() const { return closes_; }
  double opened_unix() const { return opened_unix_; }
  double closed_unix() const { return closed_unix_; }
  Json unix_bounds() const { return {opened_unix_, closed_unix_}; }  // [opened, closed]
  double drain_s() const;  // from the window's close to the point's end
  // The increase of /metrics's counters over the window, or {"error": why there is none}.
  Json server_metrics() const;

 private:
  struct ScrapeResult {
    std::optional<Scrape> scrape;
    std::string error;
  };

  std::future<ScrapeResult> scrape_async() const;
  void open();
  void close();

  tcp::endpoint ep_;
  const Options& o_;
  net::steady_timer timer_;
  std::function<void()> on_close_;
  Clock::time_point start_, opens_, closes_, end_;
  double opened_unix_ = 0, closed_unix_ = 0;
  std::future<ScrapeResult> before_future_, after_future_;
  ScrapeResult before_, after_;
};

// The live line of a running point: `tick` every second on the point's event loop, until stop() or `done` says the
// point is over (so that the pending timer does not keep the loop alive past the drain).
class ProgressTicker {
 public:
  ProgressTicker(net::io_context& ioc, std::function<bool()> done, std::function<void()> tick)
      : timer_(ioc), done_(std::move(done)), tick_(std::move(tick)) {}
  void start();
  void stop() { timer_.cancel(); }

 private:
  net::steady_timer timer_;
  std::function<bool()> done_;
  std::function<void()> tick_;
};

// Where a point stands at `now`: "warm-up", "window" or "drain".
const char* point_stage(const MeasurementWindow& window, Clock::time_point now);

// A keep-alive connection of a point and the request it carries. Each request is a generation of its own: the
// handlers of an earlier one find the generation moved on and do nothing.
struct Conn {
  explicit Conn(net::io_context& ioc) : socket(ioc), timer(ioc) {}
  int index = 0;
  tcp::socket socket;
  net::steady_timer timer;  // the request's deadline (the closed loop also waits with it before reopening)
  beast::flat_buffer buffer;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  bool connected = false;
  bool written = false;     // the current request's write began
  uint64_t generation = 0;  // the current request's number
  Clock::time_point sent_at;
};

// Closes c's connection; its next request connects again.
void drop(Conn& c);

// The request on c is over: the deadline's and the socket's pending handlers now do nothing.
void disarm(Conn& c);

// A point's requests, one at a time on each connection: the deadline (--timeout-s), connecting when needed, the write
// and the answer's read. A point derives from it for its connection type C (Conn or derived from it) and says what
// the end of a request means: fail() (a connect, write or read error, or the deadline) or answered() (the whole
// answer is in c.parser); one of them, once, per request.
// The server (of n, in --ports order) that connection `conn` talks to: the round robin, in one place for the
// connections and for the per-server tallies.
inline size_t server_of_connection(int conn, size_t n) { return static_cast<size_t>(conn) % n; }

template <class C>
class RequestCycle {
 public:
  RequestCycle(const tcp::endpoint& ep, double timeout_s) : RequestCycle(std::vector<tcp::endpoint>{ep}, timeout_s) {}
  // Several servers: connection c talks to servers[c.index % N] (a round-robin balancer that keeps connections).
  RequestCycle(std::vector<tcp::endpoint> servers, double timeout_s)
      : servers_(std::move(servers)), timeout_s_(timeout_s) {}
  virtual ~RequestCycle() = default;

  int64_t connects() const { return connects_; }  // connections opened, reopenings included

 protected:
  virtual void fail(C& c, const std::string& reason) = 0;
  virtual void answered(C& c) = 0;

  // The next request on c, `request` (which outlives it): a new generation, its deadline, then its write, after
  // connecting when c is not connected.
  void begin(C& c, const Request& request) {
    c.written = false;
    const uint64_t generation = ++c.generation;
    arm_deadline(c, generation);
    if (c.connected) return send(c, generation, request);
    connect_and_send(c, generation, request);
  }

 private:
  void arm_deadline(C& c, uint64_t generation) {
    c.timer.expires_after(seconds(timeout_s_));
    c.timer.async_wait([this, &c, generation](error_code ec) {
      if (ec || generation != c.generation) return;
      fail(c, (c.connected ? "no answer within " : "no connection within ") + number(timeout_s_) + " s");
    });
  }

  void connect_and_send(C& c, uint64_t generation, const Request& request) {
    c.buffer.clear();
    ++connects_;
    c.socket.async_connect(servers_[server_of_connection(c.index, servers_.size())],
                           [this, &c, generation, &request](error_code ec) {
      if (generation != c.generation) return;
      if (ec) return fail(c, "connect: " + ec.message());
      c.connected = true;
      error_code ignored;
      c.socket.set_option(tcp::no_delay(true), ignored);
      send(c, generation, request);
    });
  }

  void send(C& c, uint64_t generation, const Request& request) {
    c.parser.emplace();
    c.parser->body_limit(kBodyLimit);
    c.written = true;
    c.sent_at = Clock::now();
    const std::array<net::const_buffer, 2> bufs = {net::buffer(request.head), net::buffer(request.body)};
    net::async_write(c.socket, bufs, [this, &c, generation](error_code ec, size_t) {
      if (generation != c.generation) return;
      if (ec) return fail(c, "write: " + ec.message());
      bhttp::async_read(c.socket, c.buffer, *c.parser, [this, &c, generation](error_code ec, size_t) {
        if (generation != c.generation) return;
        if (ec) return fail(c, "read: " + ec.message());
        answered(c);
      });
    });
  }

  std::vector<tcp::endpoint> servers_;
  double timeout_s_;
  int64_t connects_ = 0;
};

}  // namespace serve_load
