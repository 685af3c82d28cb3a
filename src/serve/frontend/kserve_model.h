// How a steno model looks through KServe v2, whatever the wire (HTTP or gRPC): its tensors, what an inference
// request must hold (one `audio` input: an encoded file as BYTES, or FP32 PCM with a sample_rate parameter), the
// request parameters steno honours (priority, timeout, and for a transcription model diarize) and the outputs it
// returns: a transcription model text, words, word_timestamps (and word_speakers with diarize), a diarization
// model segments (the JSON of POST /v1/audio/diarizations) and rttm. docs/http-api.md and docs/grpc-api.md
// describe the same rules from the client's side.
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

inline constexpr const char* kKServePlatform = "steno_fastconformer_tdt";  // transcription models
inline constexpr const char* kKServeDiarizerPlatform = "steno_sortformer";  // diarization models
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

// By the model's task (ModelInfo::task): "transcription" or "diarization".
KServeModelMetadata kserve_model_metadata(const std::string& name, std::string_view task);
const std::vector<std::string>& kserve_output_names(std::string_view task);

// "" (the client lets the server choose) and "1" name the served version; anything else does not exist.
bool is_served_version(std::string_view version);

// A request's audio and scheduling, checked.
struct PreparedInference {
  AudioInput audio;        // BYTES: a view into the request body's tensor, which must outlive it
  int priority = 0;        // 0: the default level; 1 is the highest (Triton's convention)
  std::optional<std::chrono::microseconds> timeout;  // the `timeout` parameter: work not started by then is dropped
  std::vector<RequestedOutput> outputs;              // what to return, in order
  bool diarize = false;  // the `diarize` parameter (transcription models): who spoke each word, too
};

// Checks the request against a model of `task` (one `audio` input of an accepted datatype and shape, known
// outputs, well-formed parameters). Throws steno::Error(kInvalidArgument) naming the input, output or parameter at
// fault. The audio itself is decoded and checked by the core, on submission.
PreparedInference prepare_inference(const InferRequestBody& body, std::string_view task);

// The outputs asked for, from the answer of a model of `task`: a transcription's text BYTES [1], words BYTES [W],
// word_timestamps FP32 [W, 2] and word_speakers BYTES [W] (its words' speakers, as `steno transcribe --diarize`
// assigns them); a diarization's segments BYTES [1] (JSON) and rttm BYTES [1], its recording named `file_id`.
std::vector<OutputTensor> make_outputs(const TranscriptionResponse& answer,
                                       const std::vector<RequestedOutput>& wanted, std::string_view task,
                                       const std::string& file_id);

}  // namespace steno::serve
