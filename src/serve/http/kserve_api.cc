// KServe v2 over HTTP (serving-protocols.md §2): health, server and model metadata, model config, statistics and
// inference. Every model path also accepts the optional /versions/{version} segment; steno serves version "1".
#include "kserve_api.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "kserve_tensors.h"
#include "steno/serve/frontend/kserve_model.h"

namespace steno::serve::http {
namespace {

// The model a /v2/models/{model}[/versions/{version}] path names; 404 when it is not served.
std::string model_of(const ApiContext& ctx, const HttpRequest& request) {
  const std::string& name = request.params.at("model");
  if (!ctx.serves(name)) throw HttpError(404, fmt::format("unknown model '{}'", name));
  if (const auto v = request.params.find("version"); v != request.params.end() && !is_served_version(v->second))
    throw HttpError(404, fmt::format("model '{}' has no version '{}' (steno serves version 1)", name, v->second));
  return name;
}

// Registers `pattern` under /v2/models/{model} and /v2/models/{model}/versions/{version}.
void add_model_route(Router& router, const std::string& method, const std::string& suffix, Handler handler,
                     RouteOptions options = {}) {
  router.add(method, "/v2/models/{model}" + suffix, handler, options);
  router.add(method, "/v2/models/{model}/versions/{version}" + suffix, std::move(handler), options);
}

nlohmann::json tensors_json(const std::vector<TensorSpec>& tensors) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : tensors) out.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
  return out;
}

nlohmann::json model_metadata(const std::string& name) {
  const KServeModelMetadata m = kserve_model_metadata(name);
  return {{"name", m.name},
          {"versions", m.versions},
          {"platform", m.platform},
          {"inputs", tensors_json(m.inputs)},
          {"outputs", tensors_json(m.outputs)}};
}

nlohmann::json model_config(const ApiContext& ctx, const std::string& name) {
  const ServerOptions& o = ctx.options;
  auto param = [](const auto& v) { return nlohmann::json{{"string_value", fmt::format("{}", v)}}; };
  return {{"name", name},
          {"platform", kKServePlatform},
          {"backend", "steno"},
          {"version_policy", {{"latest", {{"num_versions", 1}}}}},
          // 0: clients send one clip per request; steno batches requests itself (dynamic_batching below).
          {"max_batch_size", 0},
          {"input", {{{"name", kAudioInput}, {"data_type", "TYPE_STRING"}, {"dims", {1}}}}},
          {"output",
           {{{"name", "text"}, {"data_type", "TYPE_STRING"}, {"dims", {1}}},
            {{"name", "words"}, {"data_type", "TYPE_STRING"}, {"dims", {-1}}},
            {{"name", "word_timestamps"}, {"data_type", "TYPE_FP32"}, {"dims", {-1, 2}}}}},
          {"dynamic_batching",
           {{"max_queue_delay_microseconds", static_cast<int64_t>(std::llround(o.max_queue_delay_ms * 1000))}}},
          {"instance_group", {{{"count", o.instance_count}, {"kind", "KIND_CPU"}}}},
          {"parameters",
           {{"max_batch_size", param(o.max_batch_size)},
            {"max_audio_seconds", param(o.max_audio_seconds)},
            {"sample_rate", param(16000)}}}};
}

void infer(const std::shared_ptr<ApiContext>& ctx, HttpRequest& request, Responder respond) {
  const auto received = Clock::now();
  const std::string model = model_of(*ctx, request);
  Submission submission;
  PreparedInference prepared;
  std::optional<std::string> id;
  try {
    std::optional<size_t> json_length;
    if (request.has_header("Inference-Header-Content-Length")) {
      const std::string text(request.header("Inference-Header-Content-Length"));
      size_t used = 0;
      unsigned long long v = 0;
      try {
        v = std::stoull(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size() || text[0] == '-')
        throw HttpError(400, fmt::format("Inference-Header-Content-Length '{}' is not a byte count", text));
      json_length = static_cast<size_t>(v);
    }
    const InferRequestBody body = parse_infer_request(request.body, json_length);
    id = body.id;
    prepared = prepare_inference(body, ctx->options.max_audio_seconds);
  } catch (const HttpError&) {
    ctx->stats->record_rejected(model, received);
    throw;
  } catch (const Error&) {  // the model's checks and the audio decoding: mapped by error_from_exception
    ctx->stats->record_rejected(model, received);
    throw;
  }
  submission.model = model;
  submission.pcm = std::move(prepared.pcm);
  submission.priority = prepared.priority;
  if (prepared.timeout) submission.deadline = received + *prepared.timeout;
  submission.received = received;
  submission.input_ms = ms_since(received);
  RenderFn render = [model, id, outputs = std::move(prepared.outputs)](const TranscriptionResponse& r) {
    return encode_infer_response(model, id, make_outputs(r.transcript, outputs));
  };
  submit_transcription(ctx, request, ApiStyle::kKServe, std::move(submission), std::move(render), std::move(respond));
}

}  // namespace

void add_kserve_routes(Router& router, const std::shared_ptr<ApiContext>& ctx) {
  const RouteOptions probe{.public_route = true};
  router.add("GET", "/v2/health/live", [](HttpRequest&, Responder respond) { respond(HttpResponse::empty(200)); },
             probe);
  router.add(
      "GET", "/v2/health/ready",
      [ctx](HttpRequest&, Responder respond) { respond(HttpResponse::empty(ctx->service.ready() ? 200 : 400)); },
      probe);
  router.add("GET", "/v2", [ctx](HttpRequest&, Responder respond) {
    const nlohmann::json doc = {
        {"name", ctx->options.server_name},
        {"version", ctx->options.server_version},
        {"extensions", {"binary_tensor_data", "model_configuration", "statistics", "schedule_policy"}}};
    respond(HttpResponse::json(200, doc.dump()));
  });
  // Before /v2/models/{model}: "stats" is the all-models statistics, not a model's name.
  router.add("GET", "/v2/models/stats", [ctx](HttpRequest&, Responder respond) {
    respond(HttpResponse::json(200, ctx->stats->to_json(ctx->service.models()).dump()));
  });
  add_model_route(router, "GET", "", [ctx](HttpRequest& request, Responder respond) {
    respond(HttpResponse::json(200, model_metadata(model_of(*ctx, request)).dump()));
  });
  add_model_route(router, "GET", "/ready", [ctx](HttpRequest& request, Responder respond) {
    model_of(*ctx, request);
    respond(HttpResponse::empty(ctx->service.ready() ? 200 : 400));
  });
  add_model_route(router, "GET", "/config", [ctx](HttpRequest& request, Responder respond) {
    respond(HttpResponse::json(200, model_config(*ctx, model_of(*ctx, request)).dump()));
  });
  add_model_route(router, "GET", "/stats", [ctx](HttpRequest& request, Responder respond) {
    respond(HttpResponse::json(200, ctx->stats->to_json({model_of(*ctx, request)}).dump()));
  });
  add_model_route(
      router, "POST", "/infer",
      [ctx](HttpRequest& request, Responder respond) { infer(ctx, request, std::move(respond)); },
      {.offload = true});
}

}  // namespace steno::serve::http
