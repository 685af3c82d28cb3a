// libFuzzer target: a KServe v2 ModelInferRequest as a gRPC call delivers it (the protobuf message of
// proto/grpc_service.proto, on any bytes), through what steno does with it before the core sees it:
// infer_body_from_proto (serve/grpc/tensor_codec.h: ids, parameters, contents or raw_input_contents, shapes and
// element counts) and prepare_inference (serve/frontend/kserve_model.h: the audio input, outputs and parameters a
// transcription or a diarization model accepts). Either step must return or throw steno::Error; the gRPC framing
// itself is gRPC's, and what protobuf refuses to parse never reaches steno. Built and run by fuzz/run.sh.
#include <cstddef>
#include <cstdint>

#include <google/protobuf/stubs/logging.h>

#include "grpc_service.pb.h"
#include "serve/frontend/kserve_model.h"
#include "serve/grpc/tensor_codec.h"
#include "steno/core/error.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // protobuf's line for each string field of invalid UTF-8 it refuses
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  try {
    const steno::serve::InferRequestBody body = steno::serve::rpc::infer_body_from_proto(request);
    for (const char* task : {"transcription", "diarization"}) {
      try {
        (void)steno::serve::prepare_inference(body, task);
      } catch (const steno::Error&) {  // a request this model does not accept
      }
    }
  } catch (const steno::Error&) {  // a malformed request
  }
  return 0;
}
