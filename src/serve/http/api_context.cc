#include "api_context.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "steno/serve/fleet/fault_injection.h"

namespace steno::serve::http {

bool ApiContext::serves(std::string_view model) const {
  for (const auto& m : service.models())
    if (m == model) return true;
  return false;
}

std::string ApiContext::resolve_model(std::string_view requested, const std::string& param) const {
  const std::vector<std::string> models = service.models();
  if (models.empty()) throw HttpError(503, "no model is loaded", param, "model_not_ready");
  if (requested.empty()) return models.front();
  for (const auto& m : models)
    if (m == requested) return m;
  if (const auto a = options.model_aliases.find(std::string(requested)); a != options.model_aliases.end())
    return a->second;
  throw HttpError(404, fmt::format("model '{}' is not served here; available: {}", requested, fmt::join(models, ", ")),
                  param, "model_not_found");
}

void submit_transcription(const std::shared_ptr<ApiContext>& ctx, const HttpRequest& request, ApiStyle style,
                          Submission submission, RenderFn render, Responder respond) {
  auto req = std::make_unique<TranscriptionRequest>();
  if (ctx->options.enable_fault_injection && request.has_header(fleet::kFaultHeader)) {
    const std::string_view name = request.header(fleet::kFaultHeader);
    const std::optional<InjectedFault> fault = fleet::parse_injected_fault(name);
    if (!fault)
      throw HttpError(400, fmt::format("{} must be crash, hang, device-fault or oom", fleet::kFaultHeader), "",
                      "invalid_fault");
    req->fault = *fault;
  }
  req->id = request.id;
  req->model = submission.model;
  req->pcm = std::move(submission.pcm);
  req->priority = submission.priority;
  req->deadline = submission.deadline;
  req->cancelled = request.cancelled;
  const double audio_s = static_cast<double>(req->pcm.size()) / 16000.0;
  req->done = [ctx, style, model = submission.model, id = request.id, received = submission.received,
               input_ms = submission.input_ms, audio_s, render = std::move(render),
               respond = std::move(respond)](TranscriptionResponse response) {
    if (response.outcome != Outcome::kOk) {
      HttpError error = error_from_outcome(response.outcome, response.message, response.retry_after_s);
      spdlog::info("{} {}: {} ({} s of audio): {} {}", id, model, error.status, audio_s, error.what(),
                   error.retry_after_s > 0 ? fmt::format("(retry after {} s)", error.retry_after_s) : "");
      ctx->stats->record_answer(model, response, received, input_ms, 0);
      respond(error_response(style, error));
      return;
    }
    const auto t0 = Clock::now();
    HttpResponse out;
    try {
      out = render(response);
    } catch (const std::exception& e) {
      // Rendering a successful transcript cannot fail on client input; if it does, it is a steno bug.
      out = error_response(style, HttpError(500, fmt::format("internal error rendering the response: {}", e.what())));
    }
    ctx->stats->record_answer(model, response, received, input_ms, ms_since(t0));
    spdlog::debug("{} {}: 200, {:.2f} s of audio, decode {:.1f} ms, queue {:.1f} ms, compute {:.1f} ms (batch {})",
                  id, model, audio_s, input_ms, response.durations.queue_ms, response.durations.compute_ms,
                  response.batch_size);
    respond(std::move(out));
  };
  ctx->service.submit(std::move(req));
}

}  // namespace steno::serve::http
