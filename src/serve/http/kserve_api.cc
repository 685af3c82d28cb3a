// KServe v2 over HTTP (serving-protocols.md §2): health, server and model metadata, model config, statistics and
// inference. Every model path also accepts the optional /versions/{version} segment; steno serves version "1".
#include "kserve_api.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "audio_input.h"
#include "kserve_tensors.h"

namespace steno::serve::http {
namespace {

constexpr const char* kPlatform = "steno_fastconformer_tdt";
constexpr const char* kInput = "audio";
const std::vector<std::string> kOutputs = {"text", "words", "word_timestamps"};

// The model a /v2/models/{model}[/versions/{version}] path names; 404 when it is not served.
std::string model_of(const ApiContext& ctx, const HttpRequest& request) {
  const std::string& name = request.params.at("model");
  if (!ctx.serves(name)) throw HttpError(404, fmt::format("unknown model '{}'", name));
  if (const auto v = request.params.find("version"); v != request.params.end() && v->second != "1")
    throw HttpError(404, fmt::format("model '{}' has no version '{}' (steno serves version 1)", name, v->second));
  return name;
}

// Registers `pattern` under /v2/models/{model} and /v2/models/{model}/versions/{version}.
void add_model_route(Router& router, const std::string& method, const std::string& suffix, Handler handler,
                     RouteOptions options = {}) {
  router.add(method, "/v2/models/{model}" + suffix, handler, options);
  router.add(method, "/v2/models/{model}/versions/{version}" + suffix, std::move(handler), options);
}

nlohmann::json model_metadata(const std::string& name) {
  return {{"name", name},
          {"versions", {"1"}},
          {"platform", kPlatform},
          {"inputs", {{{"name", kInput}, {"datatype", "BYTES"}, {"shape", {1}}}}},
          {"outputs",
           {{{"name", "text"}, {"datatype", "BYTES"}, {"shape", {1}}},
            {{"name", "words"}, {"datatype", "BYTES"}, {"shape", {-1}}},
            {{"name", "word_timestamps"}, {"datatype", "FP32"}, {"shape", {-1, 2}}}}}};
}

nlohmann::json model_config(const ApiContext& ctx, const std::string& name) {
  const ServerOptions& o = ctx.options;
  auto param = [](const auto& v) { return nlohmann::json{{"string_value", fmt::format("{}", v)}}; };
  return {{"name", name},
          {"platform", kPlatform},
          {"backend", "steno"},
          {"version_policy", {{"latest", {{"num_versions", 1}}}}},
          // 0: clients send one clip per request; steno batches requests itself (dynamic_batching below).
          {"max_batch_size", 0},
          {"input", {{{"name", kInput}, {"data_type", "TYPE_STRING"}, {"dims", {1}}}}},
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

// A numeric parameter (int64 or double, or a numeric string); nullopt when absent.
std::optional<double> number_param(const nlohmann::json& params, const char* key) {
  const auto it = params.find(key);
  if (it == params.end()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    try {
      size_t used = 0;
      const std::string& s = it->get_ref<const std::string&>();
      const double v = std::stod(s, &used);
      if (used == s.size()) return v;
    } catch (const std::exception&) {
    }
  }
  throw HttpError(400, fmt::format("parameter '{}' must be a number", key));
}

// The audio of the request's one input, as 16 kHz PCM.
std::vector<float> input_audio(const ApiContext& ctx, const InferRequestBody& body) {
  if (body.inputs.size() != 1)
    throw HttpError(400, fmt::format("expected exactly one input ('{}'), got {}", kInput, body.inputs.size()));
  const InferTensor& in = body.inputs.front();
  if (in.name != kInput)
    throw HttpError(400, fmt::format("unknown input '{}': this model takes one input named '{}'", in.name, kInput));
  const double max_s = ctx.options.max_audio_seconds;
  if (in.datatype == "BYTES") {
    if (in.element_count() != 1)
      throw HttpError(400, fmt::format("input '{}' of datatype BYTES must hold exactly one element (one encoded "
                                       "audio file), shape [1]; got shape [{}]",
                                       kInput, fmt::join(in.shape, ", ")));
    return decode_upload(in.bytes.front(), max_s, kInput);
  }
  if (in.datatype == "FP32") {
    const bool ok_shape = in.shape.size() == 1 || (in.shape.size() == 2 && in.shape[0] == 1);
    if (!ok_shape)
      throw HttpError(400, fmt::format("input '{}' of datatype FP32 must be mono PCM of shape [1, N] (or [N]); got "
                                       "shape [{}]",
                                       kInput, fmt::join(in.shape, ", ")));
    std::optional<double> rate = number_param(in.parameters, "sample_rate");
    if (!rate) rate = number_param(body.parameters, "sample_rate");
    if (!rate)
      throw HttpError(400, fmt::format("FP32 input '{}' needs a 'sample_rate' parameter (e.g. 16000) on the input",
                                       kInput));
    return pcm_to_16k(in.fp32, *rate, max_s, kInput);
  }
  throw HttpError(400, fmt::format("input '{}' has datatype {}; expected BYTES (an encoded audio file) or FP32 (PCM "
                                   "with a sample_rate parameter)",
                                   kInput, in.datatype));
}

// Which outputs to return, each binary or not. Unknown names are refused.
std::vector<RequestedOutput> wanted_outputs(const InferRequestBody& body) {
  if (body.outputs.empty()) {
    std::vector<RequestedOutput> all;
    for (const auto& name : kOutputs) all.push_back({name, body.binary_data_output});
    return all;
  }
  for (const auto& o : body.outputs)
    if (std::find(kOutputs.begin(), kOutputs.end(), o.name) == kOutputs.end())
      throw HttpError(400, fmt::format("unknown output '{}': this model has outputs {}", o.name,
                                       fmt::join(kOutputs, ", ")));
  return body.outputs;
}

std::vector<OutputTensor> make_outputs(const asr::Transcript& t, const std::vector<RequestedOutput>& wanted) {
  std::vector<OutputTensor> out;
  for (const auto& w : wanted) {
    OutputTensor o;
    o.name = w.name;
    o.binary = w.binary;
    const int64_t n = static_cast<int64_t>(t.words.size());
    if (w.name == "text") {
      o.datatype = "BYTES";
      o.shape = {1};
      o.bytes = {t.text};
    } else if (w.name == "words") {
      o.datatype = "BYTES";
      o.shape = {n};
      for (const auto& word : t.words) o.bytes.push_back(word.text);
    } else {
      o.datatype = "FP32";
      o.shape = {n, 2};
      for (const auto& word : t.words) {
        o.fp32.push_back(static_cast<float>(word.start));
        o.fp32.push_back(static_cast<float>(word.end));
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

void infer(const std::shared_ptr<ApiContext>& ctx, HttpRequest& request, Responder respond) {
  const auto received = Clock::now();
  const std::string model = model_of(*ctx, request);
  Submission submission;
  std::vector<RequestedOutput> outputs;
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
    outputs = wanted_outputs(body);
    submission.pcm = input_audio(*ctx, body);
    if (const auto priority = number_param(body.parameters, "priority")) {
      if (*priority < 0 || *priority != std::floor(*priority) || *priority > 1e9)
        throw HttpError(400, "parameter 'priority' must be a non-negative integer (1 is the highest; 0 the default)");
      submission.priority = static_cast<int>(*priority);
    }
    if (const auto timeout_us = number_param(body.parameters, "timeout")) {
      if (*timeout_us <= 0) throw HttpError(400, "parameter 'timeout' must be a positive number of microseconds");
      submission.deadline = received + std::chrono::microseconds(static_cast<int64_t>(std::min(*timeout_us, 1e15)));
    }
  } catch (const HttpError&) {
    record_rejected(*ctx, model, received);
    throw;
  }
  submission.model = model;
  submission.received = received;
  submission.input_ms = ms_since(received);
  RenderFn render = [model, id, outputs](const TranscriptionResponse& r) {
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
    respond(HttpResponse::json(200, ctx->stats.to_json(ctx->service.models()).dump()));
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
    respond(HttpResponse::json(200, ctx->stats.to_json({model_of(*ctx, request)}).dump()));
  });
  add_model_route(
      router, "POST", "/infer",
      [ctx](HttpRequest& request, Responder respond) { infer(ctx, request, std::move(respond)); },
      {.offload = true});
}

}  // namespace steno::serve::http
