// The acceptor and the I/O threads: one io_context run by io_threads threads; each connection gets its own strand,
// so a connection's handlers never run concurrently while different connections proceed in parallel.
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "connection.h"
#include "steno/core/error.h"

namespace steno::serve::http {
namespace {

using boost::system::error_code;

class BeastTransport final : public Transport {
 public:
  BeastTransport(const TransportOptions& options, RequestHandler& handler)
      : options_(options), host_(options_, handler), acceptor_(net::make_strand(ioc_)) {}

  ~BeastTransport() override { stop(); }

  void start() override {
    STENO_CHECK(options_.io_threads >= 1, "io_threads must be >= 1, got {}", options_.io_threads);
    tcp::endpoint endpoint;
    try {
      tcp::resolver resolver(ioc_);
      const auto results = resolver.resolve(options_.host, std::to_string(options_.port),
                                            tcp::resolver::passive | tcp::resolver::address_configured);
      if (results.empty()) fail(ErrorCode::kUnavailable, "cannot resolve host '{}'", options_.host);
      endpoint = results.begin()->endpoint();
      acceptor_.open(endpoint.protocol());
      acceptor_.set_option(net::socket_base::reuse_address(true));
      acceptor_.bind(endpoint);
      acceptor_.listen(net::socket_base::max_listen_connections);
    } catch (const boost::system::system_error& e) {
      fail(ErrorCode::kUnavailable, "cannot listen on {}:{}: {}", options_.host, options_.port, e.code().message());
    }
    port_ = acceptor_.local_endpoint().port();
    accept();
    for (int i = 0; i < options_.io_threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
    started_ = true;
    spdlog::info("http: listening on {}:{} ({} I/O threads)", options_.host, port_, options_.io_threads);
  }

  uint16_t port() const override { return port_; }

  void stop() override {
    if (!started_ || stopped_) return;
    stopped_ = true;
    net::post(acceptor_.get_executor(), [this] {
      error_code ignored;
      acceptor_.close(ignored);
      accept_backoff_.cancel();
    });
    host_.draining = true;
    for (const auto& c : live_connections()) c->drain();
    {
      std::unique_lock lock(host_.mu);
      if (!host_.changed.wait_for(lock, options_.drain_timeout, [&] { return host_.live.empty(); }))
        spdlog::warn("http: {} connections still busy after the {} ms drain timeout; closing them",
                     host_.live.size(), options_.drain_timeout.count());
    }
    for (const auto& c : live_connections()) c->force_close();
    {
      // Closing cancels their operations; the handlers release the connections within a few loop turns.
      std::unique_lock lock(host_.mu);
      host_.changed.wait_for(lock, std::chrono::seconds(2), [&] { return host_.live.empty(); });
    }
    work_.reset();
    ioc_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    spdlog::info("http: stopped");
  }

 private:
  void accept() {
    acceptor_.async_accept(net::make_strand(ioc_), [this](error_code ec, tcp::socket socket) {
      if (ec) {
        if (!acceptor_.is_open()) return;  // stopping
        return accept_failed(ec);
      } else {
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        auto conn = std::make_shared<Connection>(std::move(socket), host_);
        {
          std::lock_guard lock(host_.mu);
          host_.live.emplace(conn.get(), conn);
        }
        conn->start();
      }
      accept();
    });
  }

  // Out of file descriptors (or kernel memory), the pending connection stays in the backlog and the next accept
  // fails at once: retrying straight away spins a core and floods the log. So wait a little before accepting
  // again (connections finishing meanwhile free descriptors) and log at most once a second, with a count.
  void accept_failed(const error_code& ec) {
    const auto now = std::chrono::steady_clock::now();
    ++accept_failures_;
    if (now - last_accept_warning_ >= std::chrono::seconds(1)) {
      spdlog::warn("http: accept failed: {} ({} times since the last report); backing off", ec.message(),
                   accept_failures_);
      accept_failures_ = 0;
      last_accept_warning_ = now;
    }
    accept_backoff_.expires_after(std::chrono::milliseconds(50));
    accept_backoff_.async_wait([this](error_code wait_ec) {
      if (!wait_ec && acceptor_.is_open()) accept();
    });
  }

  std::vector<std::shared_ptr<Connection>> live_connections() {
    std::vector<std::shared_ptr<Connection>> out;
    std::lock_guard lock(host_.mu);
    for (auto& [ptr, weak] : host_.live)
      if (auto c = weak.lock()) out.push_back(std::move(c));
    return out;
  }

  TransportOptions options_;
  ConnectionHost host_;  // declared before ioc_: handlers the io_context destroys may still hold connections
  net::io_context ioc_;
  // Keeps run() from returning while the acceptor is between operations.
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_{ioc_.get_executor()};
  tcp::acceptor acceptor_;
  net::steady_timer accept_backoff_{acceptor_.get_executor()};  // only the accept chain touches these three
  std::chrono::steady_clock::time_point last_accept_warning_{};
  int64_t accept_failures_ = 0;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace

std::unique_ptr<Transport> make_transport(const TransportOptions& options, RequestHandler& handler) {
  return std::make_unique<BeastTransport>(options, handler);
}

}  // namespace steno::serve::http
