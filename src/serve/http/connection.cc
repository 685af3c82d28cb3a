#include "connection.h"

#include <spdlog/spdlog.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/version.hpp>


#include "errors.h"

namespace steno::serve::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr size_t kReadChunk = 16384;
constexpr size_t kWatchChunk = 4096;
constexpr size_t kMaxPipelinedBytes = 64 * 1024;    // stop watching once this much of a next request is queued
constexpr auto kLingerTime = std::chrono::seconds(2);  // read-and-discard after an error answer, at most this long
// A streamed response's parts not yet taken by the client, at most: beyond it the client is not reading.
constexpr size_t kMaxStreamBacklog = 8 << 20;

// The Responder's end: forwards to the connection if it still exists. Holds it weakly, so that a request stuck in
// the inference core never keeps a closed connection (or, at shutdown, the io_context) alive.
class ResponseSink : public Responder::Sink {
 public:
  ResponseSink(std::weak_ptr<Connection> conn, uint64_t seq) : conn_(std::move(conn)), seq_(seq) {}
  void send(HttpResponse response) override {
    if (auto c = conn_.lock()) c->deliver(seq_, std::move(response));
  }
  bool streams() const override { return true; }
  void begin(HttpResponse head) override {
    if (auto c = conn_.lock()) c->deliver_begin(seq_, std::move(head));
  }
  void more(std::string bytes) override {
    if (auto c = conn_.lock()) c->deliver_more(seq_, std::move(bytes));
  }

 private:
  std::weak_ptr<Connection> conn_;
  uint64_t seq_;
};

// The status line and the headers every response gets: Server, Content-Type, X-Request-Id, then the handler's.
template <typename Body>
void set_head(bhttp::response<Body>& res, const HttpResponse& from, const std::string& server,
              const std::string& request_id) {
  res.version(11);
  res.result(static_cast<unsigned>(from.status));
  if (res.reason().empty()) res.reason(status_reason(from.status));
  res.set(bhttp::field::server, server);
  if (!from.content_type.empty()) res.set(bhttp::field::content_type, from.content_type);
  if (!request_id.empty()) res.set("X-Request-Id", request_id);
  for (const auto& [name, value] : from.headers) res.set(name, value);
}

bool is_disconnect(const error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message || ec == net::error::eof ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == net::error::connection_aborted || ec == net::error::not_connected;
}

std::string mib(size_t bytes) {
  return bytes % (size_t{1} << 20) == 0 ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} bytes", bytes);
}

// "max_upload_mb" -> "--max-upload-mb / max_upload_mb": the flag and the config key that raise a limit.
std::string setting_names(const std::string& key) {
  std::string flag = key;
  for (char& c : flag)
    if (c == '_') c = '-';
  return fmt::format("--{} / {}", flag, key);
}

// A declared body gets one more second to arrive per MiB: an upload of hours of audio over a real network takes
// minutes, while a client trickling bytes still cannot hold a connection longer than its body justifies.
std::chrono::milliseconds body_allowance(uint64_t bytes) {
  return std::chrono::milliseconds(static_cast<int64_t>(bytes >> 20) * 1000);
}

}  // namespace

Connection::Connection(tcp::socket socket, ConnectionHost& host)
    : socket_(std::move(socket)), timer_(socket_.get_executor()), host_(host) {
  error_code ec;
  const auto ep = socket_.remote_endpoint(ec);
  remote_ = ec ? "?" : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

Connection::~Connection() {
  std::lock_guard lock(host_.mu);
  host_.live.erase(this);
  host_.changed.notify_all();
}

void Connection::start() {
  net::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->read_request(); });
}

void Connection::drain() {
  net::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->state_ == State::kReading && !self->got_bytes_) self->close();
  });
}

void Connection::force_close() {
  net::post(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
}

void Connection::deliver(uint64_t seq, HttpResponse response) {
  net::post(socket_.get_executor(), [self = shared_from_this(), seq, r = std::move(response)]() mutable {
    self->on_deliver(seq, std::move(r));
  });
}

void Connection::deliver_begin(uint64_t seq, HttpResponse head) {
  net::post(socket_.get_executor(), [self = shared_from_this(), seq, h = std::move(head)]() mutable {
    self->on_begin(seq, std::move(h));
  });
}

void Connection::deliver_more(uint64_t seq, std::string bytes) {
  net::post(socket_.get_executor(), [self = shared_from_this(), seq, b = std::move(bytes)]() mutable {
    self->on_more(seq, std::move(b));
  });
}

// ---- reading --------------------------------------------------------------------------------------------------

void Connection::read_request() {
  if (state_ == State::kClosed) return;
  if (host_.draining && buffer_.size() == 0) return close();
  state_ = State::kReading;
  ++seq_;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(host_.options.max_header_bytes));
  // No limit until the head says which route it is: on_head sets the route's (the parser stops after the head,
  // before any body byte), so that a Content-Length over it is refused naming that route's setting.
  parser_->body_limit(boost::none);
  parser_->get().body() = BodySpool(host_.options.upload_buffer_bytes, host_.options.upload_dir);
  body_limit_ = {host_.options.max_body_bytes, "max_body_mb"};
  head_ = HttpRequest{};
  request_id_.clear();
  got_bytes_ = buffer_.size() > 0;  // a pipelined request already waiting
  head_done_ = timed_out_ = body_start_checked_ = false;
  arm_timer(got_bytes_ ? host_.options.read_timeout : host_.options.idle_timeout);
  parse_buffered();
}

void Connection::read_some() {
  // Raw reads fed to the parser by parse_buffered(), rather than Beast's http::async_read_some: that one completes
  // only once the parser makes progress, so a client trickling a header byte by byte would look idle and the
  // read deadline could not start at its first byte.
  socket_.async_read_some(buffer_.prepare(kReadChunk),
                          [self = shared_from_this()](error_code ec, size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(error_code ec, size_t bytes) {
  if (state_ != State::kReading) return;
  buffer_.commit(bytes);
  if (bytes > 0 && !got_bytes_) {
    // The request has begun: from here it must arrive whole within read_timeout.
    got_bytes_ = true;
    arm_timer(host_.options.read_timeout);
  }
  if (ec) return on_read_error(ec);
  parse_buffered();
}

void Connection::parse_buffered() {
  while (buffer_.size() > 0) {
    error_code ec;
    const size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == bhttp::error::need_more) break;
    if (ec) return on_read_error(ec);
    if (!head_done_ && parser_->is_header_done()) {
      head_done_ = true;
      return on_head();  // continues with parse_buffered() unless it answers at once
    }
    if (parser_->is_done()) return on_request();
    if (head_done_ && !check_body_start()) return;
    if (used == 0) break;
  }
  read_some();
}

// Once kBodyStartBytes of a larger body are in, the handler may refuse the request from them. False when it did
// (the answer is on its way and the rest of the body is never read).
bool Connection::check_body_start() {
  if (body_start_checked_) return true;
  const auto length = parser_->content_length();
  const std::string_view body = parser_->get().body().memory();
  if (!length || *length <= kBodyStartBytes) {
    body_start_checked_ = true;  // small, or chunked (no length to judge against): read whole, as any other
    return true;
  }
  if (body.size() < kBodyStartBytes) return true;
  body_start_checked_ = true;
  std::optional<HttpResponse> early = host_.handler.check_body_start(head_, body, *length);
  if (!early) return true;
  early->close = true;
  cancel_timer();
  write(std::move(*early), true);
  return false;
}

void Connection::on_read_error(error_code ec) {
  if (ec == net::error::operation_aborted && timed_out_) {
    if (!got_bytes_) return close();  // an idle keep-alive connection: close quietly
    spdlog::info("http {} {}: request not received within {} ms; 408", remote_, head_.target,
                 host_.options.read_timeout.count());
    return fail_request(408, fmt::format("the request was not received in full within {} s (read timeout); "
                                         "closing the connection",
                                         host_.options.read_timeout.count() / 1000.0));
  }
  if (ec == bhttp::error::body_limit) return refuse_body();
  if (ec == boost::system::errc::io_error) {
    spdlog::error("http {} {}: the upload could not be stored in a temporary file", remote_, head_.target);
    return fail_request(503, "the server could not store the upload (its temporary file could not be written); "
                             "try again later");
  }
  if (ec == bhttp::error::header_limit)
    return fail_request(431, fmt::format("request headers exceed the limit of {} bytes",
                                         host_.options.max_header_bytes));
  if (is_disconnect(ec) || ec == net::error::operation_aborted) {
    if (got_bytes_) spdlog::info("http {}: client went away mid-request ({})", remote_, ec.message());
    return close();
  }
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category())  // any other parse error
    return fail_request(400, fmt::format("malformed HTTP request: {}", ec.message()));
  spdlog::debug("http {}: read error: {}", remote_, ec.message());
  close();
}

void Connection::refuse_body() {
  const auto length = parser_->content_length();
  spdlog::info("http {} {}: body {} over the limit of {}; 413", remote_, head_.target,
               length ? fmt::format("of {} bytes", *length) : std::string("(chunked)"), mib(body_limit_.bytes));
  fail_request(413, fmt::format("request body {}exceeds the limit of {} ({})",
                                length ? fmt::format("of {} bytes ", *length) : std::string(),
                                mib(body_limit_.bytes), setting_names(body_limit_.setting)));
}

void Connection::on_head() {
  const auto& msg = parser_->get();
  head_.id = request_id_ = fmt::format("req-{}", host_.next_request.fetch_add(1));
  head_.method = std::string(msg.method_string());
  head_.target = std::string(msg.target());
  const size_t q = head_.target.find('?');
  head_.path = head_.target.substr(0, q);
  if (q != std::string::npos) head_.query = head_.target.substr(q + 1);
  for (const auto& field : msg) head_.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  head_.remote = remote_;
  keep_alive_ = msg.keep_alive();

  if (std::optional<HttpResponse> early = host_.handler.check_head(head_)) {
    early->close = true;  // the body stays unread
    cancel_timer();
    return write(std::move(*early), true);
  }
  body_limit_ = host_.handler.body_limit(head_);
  const auto length = parser_->content_length();
  if (length && *length > body_limit_.bytes) return refuse_body();
  parser_->body_limit(body_limit_.bytes);  // a chunked body is held to it as it arrives
  if (length && *length > 0) arm_timer(host_.options.read_timeout + body_allowance(*length));
  if (parser_->is_done()) return on_request();
  const auto expect = msg[bhttp::field::expect];
  if (beast::iequals(expect, "100-continue")) {
    // The client waits for this before sending the body (curl does for bodies over 1 MiB).
    auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_, 11);
    return bhttp::async_write(socket_, *cont, [self = shared_from_this(), cont](error_code ec, size_t) {
      if (self->state_ != State::kReading) return;
      if (ec) return self->on_read_error(ec);
      self->parse_buffered();
    });
  }
  parse_buffered();
}

void Connection::on_request() {
  cancel_timer();
  state_ = State::kDispatched;
  keep_alive_ = parser_->get().keep_alive();
  HttpRequest request = std::move(head_);
  auto body = std::make_shared<BodySpool>(std::move(parser_->get().body()));
  try {
    body->finish();
    request.body = std::move(body);
  } catch (const std::exception& e) {
    spdlog::error("http {} {}: {}", remote_, request.target, e.what());
    head_ = std::move(request);
    return fail_request(503, "the server could not read back the upload from its temporary file; try again later");
  }
  parser_.reset();
  cancelled_ = request.cancelled;
  self_ = shared_from_this();
  watch_peer();
  host_.handler.handle(std::move(request), Responder(std::make_shared<ResponseSink>(weak_from_this(), seq_)));
}

// ---- while the request is being served ------------------------------------------------------------------------

void Connection::watch_peer() {
  if (buffer_.size() >= kMaxPipelinedBytes) return;  // enough of a next request queued; stop reading for now
  watching_ = true;
  socket_.async_read_some(buffer_.prepare(kWatchChunk),
                          [self = shared_from_this()](error_code ec, size_t n) { self->on_watch(ec, n); });
}

void Connection::on_watch(error_code ec, size_t bytes) {
  watching_ = false;
  if (state_ == State::kClosed) return;
  if (!ec) {
    buffer_.commit(bytes);
    if (pending_) return write(std::exchange(pending_, std::nullopt).value(), false);
    return watch_peer();
  }
  if (ec == net::error::operation_aborted) {  // cancelled so that the response can be written
    if (pending_) write(std::exchange(pending_, std::nullopt).value(), false);
    return;
  }
  // The client closed or reset the connection: nobody will read the answer, so let the core drop the work.
  peer_gone_ = true;
  if (cancelled_) cancelled_->store(true);
  spdlog::info("http {}: client disconnected while its request was being served ({}); cancelled", remote_,
               ec.message());
  close();
}

void Connection::on_deliver(uint64_t seq, HttpResponse response) {
  if (streaming_) {  // the last part of a streamed response
    if (seq != seq_ || stream_ended_) return;
    stream_ended_ = true;
    on_more(seq, std::move(response.body));
    return;
  }
  if (state_ != State::kDispatched || seq != seq_) return;  // closed meanwhile, or a stale answer
  if (watching_) {
    pending_ = std::move(response);
    error_code ignored;
    socket_.cancel(ignored);  // on_watch writes it
    return;
  }
  write(std::move(response), false);
}

// ---- writing --------------------------------------------------------------------------------------------------

void Connection::fail_request(int status, const std::string& message) {
  HttpResponse r = host_.handler.render_error(head_.path, HttpError(status, message));
  r.close = true;
  write(std::move(r), true);
}

void Connection::write(HttpResponse response, bool close_after) {
  if (state_ == State::kClosed) return;
  state_ = State::kWriting;
  self_.reset();
  const bool close = close_after || response.close || !keep_alive_ || host_.draining;
  auto res = std::make_shared<bhttp::response<bhttp::string_body>>();
  set_head(*res, response, host_.options.server_header, request_id_);
  res->body() = std::move(response.body);
  res->keep_alive(!close);
  res->prepare_payload();
  arm_timer(host_.options.write_timeout);
  // Input left unread (an answer given before the body was read, or a broken request) needs a lingering close;
  // a complete exchange ending with Connection: close can close at once.
  const bool unread_input = close_after || response.close;
  bhttp::async_write(socket_, *res, [self = shared_from_this(), res, close, unread_input](error_code ec, size_t) {
    if (self->state_ == State::kClosed) return;
    self->cancel_timer();
    if (ec) return self->close();
    if (unread_input) return self->linger_close();
    if (close) return self->close();
    self->read_request();
  });
}

// ---- a streamed response ----------------------------------------------------------------------------------------

void Connection::on_begin(uint64_t seq, HttpResponse head) {
  if (state_ != State::kDispatched || seq != seq_ || streaming_) return;
  streaming_ = true;
  state_ = State::kWriting;  // the timer now closes a write that takes too long; the watch read stays
  auto res = std::make_shared<bhttp::response<bhttp::empty_body>>();
  set_head(*res, head, host_.options.server_header, request_id_);
  res->keep_alive(false);  // the stream ends the connection: no pipelined request waits behind an hour of events
  res->chunked(true);
  auto sr = std::make_shared<bhttp::response_serializer<bhttp::empty_body>>(*res);
  stream_writing_ = true;
  arm_timer(host_.options.write_timeout);
  bhttp::async_write_header(socket_, *sr, [self = shared_from_this(), res, sr](error_code ec, size_t) {
    if (self->state_ == State::kClosed) return;
    self->cancel_timer();
    self->stream_writing_ = false;
    if (ec) return self->close();
    self->stream_next();
  });
  if (!head.body.empty()) on_more(seq, std::move(head.body));
}

void Connection::on_more(uint64_t seq, std::string bytes) {
  if (!streaming_ || seq != seq_ || state_ == State::kClosed) return;
  if (!bytes.empty()) {
    stream_backlog_ += bytes.size();
    stream_parts_.push_back(std::move(bytes));
  }
  if (stream_backlog_ > kMaxStreamBacklog) {
    spdlog::warn("http {}: client is not reading its event stream ({} queued); dropped, its request cancelled",
                 remote_, mib(stream_backlog_));
    return close();
  }
  if (!stream_writing_) stream_next();
}

void Connection::stream_next() {
  if (state_ == State::kClosed || stream_writing_) return;
  if (stream_parts_.empty()) {
    if (!stream_ended_) return;  // more parts to come
    stream_writing_ = true;
    arm_timer(host_.options.write_timeout);
    return net::async_write(socket_, bhttp::make_chunk_last(), [self = shared_from_this()](error_code ec, size_t) {
      if (self->state_ == State::kClosed) return;
      self->streaming_ = false;  // complete: closing now cancels nothing
      self->close();
      (void)ec;
    });
  }
  auto part = std::make_shared<std::string>(std::move(stream_parts_.front()));
  stream_parts_.pop_front();
  stream_writing_ = true;
  arm_timer(host_.options.write_timeout);
  net::async_write(socket_, bhttp::make_chunk(net::buffer(*part)), [self = shared_from_this(), part](error_code ec,
                                                                                                      size_t) {
    if (self->state_ == State::kClosed) return;
    self->cancel_timer();
    self->stream_writing_ = false;
    self->stream_backlog_ -= part->size();
    if (ec) return self->close();
    self->stream_next();
  });
}

void Connection::linger_close() {
  // Half-close, then read and discard until the client closes (or for kLingerTime): closing a socket with
  // unread input makes the kernel send a reset, which can destroy the answer before the client reads it.
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
  state_ = State::kWriting;  // the timer then closes instead of answering 408
  arm_timer(std::chrono::duration_cast<std::chrono::milliseconds>(kLingerTime));
  if (!linger_buffer_) linger_buffer_ = std::make_unique<std::array<char, 16384>>();
  linger_read();
}

void Connection::linger_read() {
  socket_.async_read_some(net::buffer(*linger_buffer_), [self = shared_from_this()](error_code ec, size_t) {
    if (self->state_ == State::kClosed) return;
    if (ec) return self->close();
    self->linger_read();
  });
}

void Connection::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  // A stream cut before its end (a client that stopped reading or went away): nobody reads the rest.
  if (streaming_ && cancelled_) cancelled_->store(true);
  cancel_timer();
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  pending_.reset();
  self_.reset();  // may be the last reference: nothing after this line may touch members
}

// ---- deadline -------------------------------------------------------------------------------------------------

void Connection::arm_timer(std::chrono::milliseconds after) {
  const uint64_t gen = ++timer_gen_;
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this(), gen](error_code ec) {
    if (ec || gen != self->timer_gen_ || self->state_ == State::kClosed) return;
    if (self->state_ == State::kReading) {
      self->timed_out_ = true;
      error_code ignored;
      self->socket_.cancel(ignored);  // the pending read completes with operation_aborted -> 408
    } else {
      self->close();  // a write (or a lingering close) that took too long
    }
  });
}

void Connection::cancel_timer() {
  ++timer_gen_;
  timer_.cancel();
}

}  // namespace steno::serve::http
