#include "api_context.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace steno::serve::http {
namespace {

// A warning as a header value: what a client cannot break lines or fields with (the text comes from decoding the
// client's own file, but the header must stay one header).
std::string header_safe(std::string_view text) {
  std::string out;
  for (unsigned char c : text.substr(0, 512)) out += (c >= 0x20 && c != 0x7f) ? static_cast<char>(c) : ' ';
  return out;
}

}  // namespace

void submit_transcription(const std::shared_ptr<ApiContext>& ctx, const HttpRequest& request, ApiStyle style,
                          Submission submission, RenderFn render, Responder respond,
                          RenderFailureFn render_failure) {
  submission.id = request.id;
  submission.cancelled = request.cancelled;
  submission.fault = std::string(request.header(kFaultHeader));
  AnswerFn answer = [style, render = std::move(render), respond = std::move(respond),
                     render_failure = std::move(render_failure)](TranscriptionResponse r) {
    HttpResponse out;
    if (!r.ok()) {
      const HttpError e = http_error(r.error());
      std::optional<HttpResponse> own = render_failure ? render_failure(e) : std::nullopt;
      out = own ? std::move(*own) : error_response(style, e);
    } else {
      try {
        out = render(r);
      } catch (const std::exception& e) {
        // Rendering a successful transcript cannot fail on client input; if it does, it is a steno bug.
        out = error_response(style, HttpError(500, fmt::format("internal error rendering the response: {}", e.what())));
      }
    }
    for (const std::string& w : r.warnings) out.headers.emplace_back(std::string(kWarningHeader), header_safe(w));
    respond(std::move(out));
  };
  ctx->service.submit(std::move(submission), std::move(answer));
}

}  // namespace steno::serve::http
