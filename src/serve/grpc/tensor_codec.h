// The KServe messages of proto/grpc_service.proto to and from steno's wire-neutral types (frontend/): inference
// requests and responses, model metadata and statistics.
#pragma once

#include <string>
#include <vector>

#include "grpc_service.pb.h"
#include "serve/frontend/infer_tensors.h"
#include "serve/frontend/kserve_model.h"
#include "steno/serve/service.h"

namespace steno::serve::rpc {

// A ModelInferRequest's id, parameters, inputs (from `contents` or `raw_input_contents`) and requested outputs.
// Copies the tensors' data, so the message may go away after. steno::Error(kInvalidArgument) naming the input at
// fault for what the protocol forbids: raw_input_contents not one per input, an input with both contents and raw
// data, a negative dimension, a data length that does not match the shape.
InferRequestBody infer_body_from_proto(const inference::ModelInferRequest& request);

// Fills `response` with the outputs, their data in raw_output_contents (as Triton answers).
void fill_infer_response(const std::string& model, const std::string& id, const std::vector<OutputTensor>& outputs,
                         inference::ModelInferResponse* response);

void fill_model_metadata(const KServeModelMetadata& metadata, inference::ModelMetadataResponse* response);

void fill_model_statistics(const std::vector<ModelStatsSnapshot>& stats, inference::ModelStatisticsResponse* response);

}  // namespace steno::serve::rpc
