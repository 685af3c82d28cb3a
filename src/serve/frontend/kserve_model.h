// How a steno model looks through KServe v2, whatever the wire (HTTP or gRPC): its tensors, what an inference
// request must hold (one `audio` input: an encoded file as BYTES, or FP32 PCM with a sample_rate parameter), the
// request parameters steno honours (priority, timeout) and the outputs it returns (text, words,
// word_timestamps). docs/http-api.md and docs/grpc-api.md describe the same rules from the client's side.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "steno/asr/transcript.h"
#include "serve/frontend/infer_tensors.h"
#include "steno/serve/service.h"

namespace steno::serve {

inline constexpr const char* kKServePlatform = "steno_fastconformer_tdt";
inline constexpr const char* kAudioInput = "audio";
inline constexpr const char* kModelVersion = "1";  // steno serves each model as version 1

struct TensorSpec {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;  // -1: variable
};

struct KServeModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;
  std::vector<TensorSpec> inputs, outputs;
};

KServeModelMetadata kserve_model_metadata(const std::string& name);
const std::vector<std::string>& kserve_output_names();

// "" (the client lets the server choose) and "1" name the served version; anything else does not exist.
bool is_served_version(std::string_view version);

// A request's audio and scheduling, checked.
struct PreparedInference {
  AudioInput audio;        // BYTES: a view into the request body's tensor, which must outlive it
  int priority = 0;        // 0: the default level; 1 is the highest (Triton's convention)
  std::optional<std::chrono::microseconds> timeout;  // the `timeout` parameter: work not started by then is dropped
  std::vector<RequestedOutput> outputs;              // what to return, in order
};

// Checks the request against the model (one `audio` input of an accepted datatype and shape, known outputs,
// well-formed parameters). Throws steno::Error(kInvalidArgument) naming the input, output or parameter at fault.
// The audio itself is decoded and checked by the core, on submission.
PreparedInference prepare_inference(const InferRequestBody& body);

// The outputs asked for, from a transcript: text BYTES [1], words BYTES [W], word_timestamps FP32 [W, 2].
std::vector<OutputTensor> make_outputs(const asr::Transcript& transcript,
                                       const std::vector<RequestedOutput>& wanted);

}  // namespace steno::serve
