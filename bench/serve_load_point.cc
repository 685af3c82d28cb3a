#include "serve_load_point.h"

#include <chrono>
#include <utility>

namespace serve_load {

MeasurementWindow::MeasurementWindow(net::io_context& ioc, const tcp::endpoint& ep, const Options& o)
    : ep_(ep), o_(o), timer_(ioc) {}

void MeasurementWindow::start(std::function<void()> on_close) {
  on_close_ = std::move(on_close);
  start_ = Clock::now();
  opens_ = start_ + seconds(o_.warmup_s);
  closes_ = opens_ + seconds(o_.duration_s);
  timer_.expires_at(opens_);
  timer_.async_wait([this](error_code) { open(); });
}

void MeasurementWindow::finish() {
  end_ = Clock::now();
  before_ = before_future_.get();
  after_ = after_future_.get();
}

double MeasurementWindow::drain_s() const { return std::chrono::duration<double>(end_ - closes_).count(); }

Json MeasurementWindow::server_metrics() const {
  if (before_.scrape && after_.scrape) return server_side(*before_.scrape, *after_.scrape);
  return {{"error", "/metrics: " + (before_.scrape ? after_.error : before_.error)}};
}

std::future<MeasurementWindow::ScrapeResult> MeasurementWindow::scrape_async() const {
  return std::async(std::launch::async, [ep = ep_, &o = o_] {
    ScrapeResult r;
    r.scrape = scrape_metrics(ep, o, r.error);
    return r;
  });
}

void MeasurementWindow::open() {
  opened_unix_ = unix_now();
  before_future_ = scrape_async();
  timer_.expires_at(closes_);
  timer_.async_wait([this](error_code) { close(); });
}

void MeasurementWindow::close() {
  closed_unix_ = unix_now();
  after_future_ = scrape_async();
  on_close_();
}

void drop(Conn& c) {
  error_code ignored;
  c.socket.shutdown(tcp::socket::shutdown_both, ignored);
  c.socket.close(ignored);
  c.connected = false;
}

void disarm(Conn& c) {
  ++c.generation;
  c.timer.cancel();
}

void ProgressTicker::start() {
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](error_code ec) {
    if (ec || done_()) return;
    tick_();
    start();
  });
}

const char* point_stage(const MeasurementWindow& window, Clock::time_point now) {
  return now < window.opens() ? "warm-up" : now < window.closes() ? "window" : "drain";
}

}  // namespace serve_load
