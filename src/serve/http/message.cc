#include "serve/http/message.h"

#include <strings.h>

namespace steno::serve::http {

namespace {
bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}
}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

bool HttpRequest::has_header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return true;
  return false;
}

HttpResponse HttpResponse::json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::text(int status, std::string body, std::string content_type) {
  HttpResponse r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::empty(int status) {
  HttpResponse r;
  r.status = status;
  r.content_type.clear();
  return r;
}

void Responder::operator()(HttpResponse response) const {
  if (!state_ || state_->sent.exchange(true)) return;  // a second call is a no-op, never a second response
  {
    std::lock_guard lock(state_->mu);
    if (state_->held) {  // begun, for a sink that cannot stream: the parts go whole
      state_->held->body += response.body;
      response = std::move(*state_->held);
      state_->held.reset();
    }
  }
  state_->sink->send(std::move(response));
}

void Responder::begin(HttpResponse head) const {
  if (!state_ || state_->sent.load()) return;
  std::lock_guard lock(state_->mu);
  if (state_->begun) return;
  state_->begun = true;
  if (state_->sink->streams())
    state_->sink->begin(std::move(head));
  else
    state_->held = std::move(head);
}

void Responder::more(std::string bytes) const {
  if (!state_ || state_->sent.load()) return;
  std::lock_guard lock(state_->mu);
  if (!state_->begun) return;
  if (state_->held)
    state_->held->body += bytes;
  else
    state_->sink->more(std::move(bytes));
}

bool Responder::begun() const {
  if (!state_) return false;
  std::lock_guard lock(state_->mu);
  return state_->begun;
}

Responder::State::~State() {
  if (!sent.load() && sink)
    sink->send(HttpResponse::json(500, R"({"error":"internal error: the request's handler produced no response"})"));
}

}  // namespace steno::serve::http
