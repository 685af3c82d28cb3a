#include "tensor_codec.h"

#include <fmt/format.h>

#include "steno/core/error.h"

namespace steno::serve::rpc {
namespace {

using inference::InferParameter;

// An InferParameter as the JSON value the wire-neutral types hold; null when unset.
nlohmann::json parameter_json(const InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case InferParameter::kBoolParam: return p.bool_param();
    case InferParameter::kInt64Param: return p.int64_param();
    case InferParameter::kStringParam: return p.string_param();
    case InferParameter::kDoubleParam: return p.double_param();
    case InferParameter::kUint64Param: return p.uint64_param();
    case InferParameter::PARAMETER_CHOICE_NOT_SET: break;
  }
  return nullptr;
}

nlohmann::json parameters_json(const google::protobuf::Map<std::string, InferParameter>& params) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : params) out[key] = parameter_json(value);
  return out;
}

// The typed contents of the datatypes steno reads; the others are left without data (refused by datatype).
void fill_from_contents(InferTensor& t, const inference::InferTensorContents& c) {
  if (t.datatype == "BYTES") t.bytes.assign(c.bytes_contents().begin(), c.bytes_contents().end());
  if (t.datatype == "FP32") t.fp32.assign(c.fp32_contents().begin(), c.fp32_contents().end());
}

void set_duration(const StatDuration& d, inference::StatisticDuration* out) {
  out->set_count(d.count);
  out->set_ns(d.ns);
}

}  // namespace

InferRequestBody infer_body_from_proto(const inference::ModelInferRequest& r) {
  InferRequestBody body;
  if (!r.id().empty()) body.id = r.id();
  body.parameters = parameters_json(r.parameters());
  const bool raw = r.raw_input_contents_size() > 0;
  if (raw && r.raw_input_contents_size() != r.inputs_size())
    fail(ErrorCode::kInvalidArgument,
         "raw_input_contents has {} entries but the request has {} inputs: give one per input, in input order",
         r.raw_input_contents_size(), r.inputs_size());
  for (int i = 0; i < r.inputs_size(); ++i) {
    const auto& in = r.inputs(i);
    InferTensor t;
    t.name = in.name();
    t.datatype = in.datatype();
    for (int64_t d : in.shape()) {
      if (d < 0)
        fail(ErrorCode::kInvalidArgument, "input '{}': shape must be non-negative integers, got {}", t.name, d);
      t.shape.push_back(d);
    }
    t.parameters = parameters_json(in.parameters());
    if (raw) {
      if (in.has_contents())
        fail(ErrorCode::kInvalidArgument,
             "input '{}' has both 'contents' and raw_input_contents: send the data in one of them", t.name);
      fill_from_raw(t, r.raw_input_contents(i));
    } else {
      fill_from_contents(t, in.contents());
    }
    check_element_count(t);
    body.inputs.push_back(std::move(t));
  }
  for (const auto& out : r.outputs()) body.outputs.push_back({out.name(), false});
  return body;
}

void fill_infer_response(const std::string& model, const std::string& id, const std::vector<OutputTensor>& outputs,
                         inference::ModelInferResponse* response) {
  response->set_model_name(model);
  response->set_model_version(kModelVersion);
  response->set_id(id);
  for (const OutputTensor& o : outputs) {
    auto* t = response->add_outputs();
    t->set_name(o.name);
    t->set_datatype(o.datatype);
    for (int64_t d : o.shape) t->add_shape(d);
    response->add_raw_output_contents(raw_output_data(o));
  }
}

void fill_model_metadata(const KServeModelMetadata& m, inference::ModelMetadataResponse* response) {
  response->set_name(m.name);
  for (const auto& v : m.versions) response->add_versions(v);
  response->set_platform(m.platform);
  auto add = [](const TensorSpec& spec, inference::ModelMetadataResponse::TensorMetadata* t) {
    t->set_name(spec.name);
    t->set_datatype(spec.datatype);
    for (int64_t d : spec.shape) t->add_shape(d);
  };
  for (const auto& t : m.inputs) add(t, response->add_inputs());
  for (const auto& t : m.outputs) add(t, response->add_outputs());
}

void fill_model_statistics(const std::vector<ModelStatsSnapshot>& stats,
                           inference::ModelStatisticsResponse* response) {
  for (const ModelStatsSnapshot& s : stats) {
    auto* m = response->add_model_stats();
    m->set_name(s.name);
    m->set_version(s.version);
    m->set_last_inference(s.last_inference_ms);
    m->set_inference_count(s.inference_count);
    m->set_execution_count(s.execution_count);
    auto* is = m->mutable_inference_stats();
    set_duration(s.success, is->mutable_success());
    set_duration(s.fail, is->mutable_fail());
    set_duration(s.queue, is->mutable_queue());
    set_duration(s.compute_input, is->mutable_compute_input());
    set_duration(s.compute_infer, is->mutable_compute_infer());
    set_duration(s.compute_output, is->mutable_compute_output());
    is->mutable_cache_hit();  // steno has no response cache: present, zero
    is->mutable_cache_miss();
    for (const BatchSizeStats& b : s.batches) {
      auto* bs = m->add_batch_stats();
      bs->set_batch_size(static_cast<uint64_t>(b.batch_size));
      set_duration(b.compute_input, bs->mutable_compute_input());
      set_duration(b.compute_infer, bs->mutable_compute_infer());
      set_duration(b.compute_output, bs->mutable_compute_output());
    }
  }
}

}  // namespace steno::serve::rpc
