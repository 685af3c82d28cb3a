// KServe v2 over HTTP: health, server and model metadata, model config, statistics and
// inference. Every model path also accepts the optional /versions/{version} segment; steno serves version "1".
#include "kserve_api.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "kserve_tensors.h"
#include "serve/frontend/audio_start.h"
#include "serve/frontend/kserve_model.h"

namespace steno::serve::http {
namespace {

// The model a /v2/models/{model}[/versions/{version}] path names (its name or an alias), transcription or
// diarization; 404 when it is not served.
ModelInfo model_of(const ApiContext& ctx, const HttpRequest& request) {
  const ModelInfo model = resolve_model(ctx.service, request.params.at("model"), false);
  if (const auto v = request.params.find("version"); v != request.params.end() && !is_served_version(v->second))
    throw HttpError(404, fmt::format("model '{}' has no version '{}' (steno serves version 1)", model.name, v->second));
  return model;
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

nlohmann::json model_metadata(const ModelInfo& model) {
  const KServeModelMetadata m = kserve_model_metadata(model.name, model.task);
  return {{"name", m.name},
          {"versions", m.versions},
          {"platform", m.platform},
          {"inputs", tensors_json(m.inputs)},
          {"outputs", tensors_json(m.outputs)}};
}

// Triton's data_type names for KServe's datatypes.
std::string config_type(const std::string& datatype) { return datatype == "BYTES" ? "TYPE_STRING" : "TYPE_" + datatype; }

nlohmann::json model_config(const ModelInfo& m) {
  auto param = [](const auto& v) { return nlohmann::json{{"string_value", fmt::format("{}", v)}}; };
  nlohmann::json outputs = nlohmann::json::array();
  for (const TensorSpec& t : kserve_model_metadata(m.name, m.task).outputs)
    outputs.push_back({{"name", t.name}, {"data_type", config_type(t.datatype)}, {"dims", t.shape}});
  return {{"name", m.name},
          {"platform", m.platform},
          {"backend", "steno"},
          {"version_policy", {{"latest", {{"num_versions", 1}}}}},
          // 0: clients send one clip per request; steno batches requests itself (dynamic_batching below).
          {"max_batch_size", 0},
          {"input", {{{"name", kAudioInput}, {"data_type", "TYPE_STRING"}, {"dims", {1}}}}},
          {"output", outputs},
          {"dynamic_batching", {{"max_queue_delay_microseconds", m.max_queue_delay_us}}},
          {"instance_group", {{{"count", m.executors}, {"kind", m.on_gpu ? "KIND_GPU" : "KIND_CPU"}}}},
          {"parameters",
           {{"max_batch_size", param(m.max_batch_size)},
            {"max_audio_seconds", param(m.max_audio_seconds)},
            {"sample_rate", param(m.sample_rate)},
            {"device", param(m.device)},
            {"share", param(m.share)},
            {"aliases", param(fmt::format("{}", fmt::join(m.aliases, ",")))}}}};
}

nlohmann::json duration_json(const StatDuration& d) { return {{"count", d.count}, {"ns", d.ns}}; }

// The statistics extension's JSON: {"model_stats": [...]}.
nlohmann::json statistics_json(const std::vector<ModelStatsSnapshot>& snapshots) {
  nlohmann::json list = nlohmann::json::array();
  for (const ModelStatsSnapshot& s : snapshots) {
    nlohmann::json batch_stats = nlohmann::json::array();
    for (const auto& b : s.batches)
      batch_stats.push_back({{"batch_size", b.batch_size},
                             {"compute_input", duration_json(b.compute_input)},
                             {"compute_infer", duration_json(b.compute_infer)},
                             {"compute_output", duration_json(b.compute_output)}});
    list.push_back({{"name", s.name},
                    {"version", s.version},
                    {"last_inference", s.last_inference_ms},
                    {"inference_count", s.inference_count},
                    {"execution_count", s.execution_count},
                    {"inference_stats",
                     {{"success", duration_json(s.success)},
                      {"fail", duration_json(s.fail)},
                      {"queue", duration_json(s.queue)},
                      {"compute_input", duration_json(s.compute_input)},
                      {"compute_infer", duration_json(s.compute_infer)},
                      {"compute_output", duration_json(s.compute_output)},
                      {"cache_hit", duration_json({})},
                      {"cache_miss", duration_json({})}}},
                    {"response_stats", nlohmann::json::object()},
                    {"batch_stats", batch_stats},
                    {"memory_usage", nlohmann::json::array()}});
  }
  return {{"model_stats", list}};
}

std::vector<std::string> names_of(const std::vector<ModelInfo>& models) {
  std::vector<std::string> names;
  for (const ModelInfo& m : models) names.push_back(m.name);
  return names;
}

// The Inference-Header-Content-Length header: the JSON part's length in a binary request; nullopt when absent.
std::optional<size_t> json_header_length(const HttpRequest& request) {
  if (!request.has_header("Inference-Header-Content-Length")) return std::nullopt;
  const std::string text(request.header("Inference-Header-Content-Length"));
  size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || text[0] == '-')
    throw ServeError(Outcome::kInvalidInput, fmt::format("Inference-Header-Content-Length '{}' is not a byte count", text));
  return static_cast<size_t>(v);
}

void infer(const std::shared_ptr<ApiContext>& ctx, HttpRequest& request, Responder respond) {
  Submission submission;
  submission.received = Clock::now();
  const ModelInfo model = model_of(*ctx, request);
  submission.model = model.name;
  submission.task = model.task;
  submission.audio_field = kAudioInput;
  InferRequestBody body;  // the audio is a view into it: it lives until submit returns
  PreparedInference prepared;
  try {
    body = parse_infer_request(request.body_view(), json_header_length(request));
    prepared = prepare_inference(body, model.task);
    if (prepared.diarize) submission.diarizer = "";  // the first diarization model served, beside this one
    submission.audio = std::move(prepared.audio);
    submission.priority = prepared.priority;
    if (prepared.timeout) submission.deadline = submission.received + *prepared.timeout;
  } catch (const ServeError& e) {  // a malformed request of a served model counts as its failure
    submission.refused = e;
  } catch (const Error& e) {
    submission.refused = serve_error(e);
  }
  RenderFn render = [id = body.id, outputs = std::move(prepared.outputs),
                     task = model.task](const TranscriptionResponse& r) {
    // The RTTM recording is named by the request's id (KServe's own request field), else "audio".
    return encode_infer_response(r.model, id, make_outputs(r, outputs, task, id.value_or("audio")));
  };
  submit_transcription(ctx, request, ApiStyle::kKServe, std::move(submission), std::move(render), std::move(respond));
}

// A large raw-binary inference request (Inference-Header-Content-Length: 0, the body is the audio file) whose
// audio is surely over its model's limit, refused from the start of the body.
std::optional<HttpResponse> refuse_long_raw_audio(const ApiContext& ctx, const HttpRequest& head,
                                                  std::string_view start, uint64_t content_length) {
  if (head.header("Inference-Header-Content-Length") != "0") return std::nullopt;
  ModelInfo model;
  try {
    model = model_of(ctx, head);
  } catch (const std::exception&) {
    return std::nullopt;  // the handler answers an unknown model
  }
  const auto over = audio_start_over_limit(start, content_length, model.max_audio_seconds, kAudioInput);
  if (!over) return std::nullopt;
  return error_response(ApiStyle::kKServe, http_error(*over));
}

}  // namespace

void add_kserve_routes(Router& router, const std::shared_ptr<ApiContext>& ctx) {
  const RouteOptions probe{.public_route = true};
  router.add(
      "GET", "/v2/health/live",
      [ctx](HttpRequest&, Responder respond) { respond(HttpResponse::empty(ctx->service.live() ? 200 : 400)); },
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
    respond(HttpResponse::json(200, statistics_json(ctx->service.statistics(names_of(ctx->service.models()))).dump()));
  });
  add_model_route(router, "GET", "", [ctx](HttpRequest& request, Responder respond) {
    respond(HttpResponse::json(200, model_metadata(model_of(*ctx, request)).dump()));
  });
  add_model_route(router, "GET", "/ready", [ctx](HttpRequest& request, Responder respond) {
    model_of(*ctx, request);
    respond(HttpResponse::empty(ctx->service.ready() ? 200 : 400));
  });
  add_model_route(router, "GET", "/config", [ctx](HttpRequest& request, Responder respond) {
    respond(HttpResponse::json(200, model_config(model_of(*ctx, request)).dump()));
  });
  add_model_route(router, "GET", "/stats", [ctx](HttpRequest& request, Responder respond) {
    respond(HttpResponse::json(200, statistics_json(ctx->service.statistics({model_of(*ctx, request).name})).dump()));
  });
  add_model_route(
      router, "POST", "/infer",
      [ctx](HttpRequest& request, Responder respond) { infer(ctx, request, std::move(respond)); },
      {.offload = true,
       // Binary tensors are views into the body; a JSON body (base64 audio) becomes a DOM: max_body_mb.
       .upload = [](const HttpRequest& head) { return head.has_header("Inference-Header-Content-Length"); },
       .check_body_start = [ctx](const HttpRequest& head, std::string_view start, uint64_t length) {
         return refuse_long_raw_audio(*ctx, head, start, length);
       }});
}

}  // namespace steno::serve::http
