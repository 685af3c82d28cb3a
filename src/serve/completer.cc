#include "serve/completer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <exception>

namespace steno::serve {
namespace {

// Client-chosen strings must not be able to forge fields or lines: quote anything beyond a plain token.
std::string log_value(std::string_view s, size_t max_len = 128) {
  const bool plain = !s.empty() && s.size() <= max_len && s.find_first_of(" \t\r\n\"\\=") == std::string_view::npos;
  bool printable = true;
  for (unsigned char c : s) printable = printable && c >= 0x20 && c != 0x7f;
  if (plain && printable) return std::string(s);
  std::string out = "\"";
  for (unsigned char c : s.substr(0, max_len)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max_len) out += "...";
  return out + "\"";
}

}  // namespace

std::string request_log_line(const TranscriptionRequest& request, const TranscriptionResponse& r) {
  const double audio_s = static_cast<double>(request.pcm.size()) / kPcmSampleRate;
  std::string line = fmt::format("request id={} model={} outcome={} audio_s={:.3f} queue_ms={:.1f} compute_ms={:.1f} "
                                 "batch={}",
                                 log_value(request.id), log_value(request.model), outcome_name(r.outcome), audio_s,
                                 r.durations.queue_ms, r.durations.compute_ms, r.batch_size);
  if (r.outcome == Outcome::kOk) {
    const StageDurations& d = r.durations;
    line += fmt::format(" features_ms={:.1f} encoder_ms={:.1f} decoder_ms={:.1f} detokenize_ms={:.1f}",
                        d.features_ms, d.encoder_ms, d.decoder_ms, d.detokenize_ms);
  } else {
    line += " message=" + log_value(r.message, 512);
  }
  return line;
}

void RequestCompleter::operator()(Completion c) const {
  if (!c.request) return;
  TranscriptionRequest& req = *c.request;
  TranscriptionResponse& r = c.response;
  r.model = req.model;
  r.input_ms = req.input_ms;
  r.audio_seconds = static_cast<double>(req.pcm.size()) / kPcmSampleRate;
  r.warnings = std::move(req.warnings);
  // A piece of a long request is the request's work, not a request: counted and logged once, with the whole.
  if (stats_ && req.piece && r.ok()) stats_->piece_ran();
  if (stats_ && !req.piece)
    stats_->request_finished(r, std::chrono::duration<double, std::milli>(Clock::now() - req.arrival).count(),
                             req.ran_as_pieces);
  spdlog::log(req.piece ? spdlog::level::debug : spdlog::level::info, "{}", request_log_line(req, r));
  if (!req.done) return;
  const bool ok = r.ok();
  const int batch_size = r.batch_size;
  const Clock::time_point answer_start = Clock::now();
  try {
    req.done(std::move(r));
  } catch (const std::exception& e) {
    spdlog::error("request id={} answer callback threw: {}", log_value(req.id), e.what());
  } catch (...) {
    spdlog::error("request id={} answer callback threw", log_value(req.id));
  }
  if (stats_ && ok && !req.piece)
    stats_->output_rendered(batch_size, std::chrono::duration<double, std::milli>(Clock::now() - answer_start).count());
}

Completion reject(std::unique_ptr<TranscriptionRequest> request, Outcome outcome, std::string message,
                  double queue_ms) {
  Completion c;
  c.response.outcome = outcome;
  c.response.message = std::move(message);
  c.response.durations.queue_ms = queue_ms;
  c.request = std::move(request);
  return c;
}

}  // namespace steno::serve
