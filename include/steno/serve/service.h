// The service contract: everything a front end (OpenAI over HTTP, KServe v2 over HTTP or gRPC) knows about the
// inference core behind it. A front end turns its protocol into a Submission, submits it, and renders the one
// TranscriptionResponse it gets back; model names, audio decoding, admission, batching, statistics and logging all
// happen behind this interface, the same way for every protocol.
//
//   submit(Submission, AnswerFn)   the one way in; the answer always comes, exactly once (possibly before submit
//                                  returns), on a core thread: front ends hand it to their own I/O from there
//   models(), resolve_model()      the served models, their aliases and settings (model names as clients send them)
//   statistics(), render_metrics() what the core counted: KServe statistics, Prometheus text
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "steno/asr/transcript.h"
#include "steno/core/error.h"

namespace steno::serve {

using Clock = std::chrono::steady_clock;

// Why a request was not served. Each protocol's status for it comes from ServeError (below), never from a table of
// the front end's own.
enum class Outcome {
  kOk,
  kInvalidInput,       // malformed, empty, corrupt audio or request fields
  kOverLimit,          // audio longer than the model's limit, or a body over the size limit
  kUnsupportedFormat,  // a container or codec steno does not read (Wave64, AU, ...)
  kModelNotFound,      // a name that is neither a served model nor one of its aliases
  kQueueFull,          // admission refused it: try again later (retry_after_s)
  kDeadlineExceeded,   // its deadline passed before it could run
  kCancelled,          // the client went away or cancelled
  kShuttingDown,       // the server is draining
  kUnavailable,        // the server cannot serve it now (no model ready, resources missing)
  kInternal,           // the engine or steno failed: a server fault
};
const char* outcome_name(Outcome o);  // "ok", "invalid_input", ...

// The one error type of the serving layer: what went wrong, in words a client can act on, and the status every
// protocol gives it. Thrown inside front ends and the core; carried to clients in a TranscriptionResponse.
class ServeError : public std::runtime_error {
 public:
  ServeError(Outcome outcome, const std::string& message, std::string param = {}, double retry_after_s = 0);

  Outcome outcome() const { return outcome_; }
  const std::string& param() const { return param_; }  // the request field at fault ("file", "model"), if any
  double retry_after_s() const { return retry_after_s_; }  // kQueueFull: seconds a client should wait

  // HTTP: 400, 413, 415, 404, 429, 504, 499 (nginx's "client closed request"), 503, 503, 500.
  int http_status() const;
  // gRPC status code numbers (grpc::StatusCode): INVALID_ARGUMENT for bad input of any kind, NOT_FOUND,
  // RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, CANCELLED, UNAVAILABLE, INTERNAL.
  int grpc_code() const;
  // The machine-readable code OpenAI-style bodies carry ("invalid_input", "model_not_found", ...).
  const char* code() const { return outcome_name(outcome_); }

 private:
  Outcome outcome_;
  std::string param_;
  double retry_after_s_;
};

// A steno::Error met while reading a client's input (audio decoding, tensor parsing) as a ServeError:
// kInvalidArgument / kDataLoss -> kInvalidInput, kOutOfRange -> kOverLimit, kUnimplemented -> kUnsupportedFormat,
// kNotFound -> kModelNotFound, kUnavailable / kResourceExhausted -> kUnavailable, kInternal -> kInternal.
ServeError serve_error(const Error& e, std::string param = {});

// Triton's failure reason for an outcome other than kOk, the label of nv_inference_request_failure: REJECTED (queue
// full, deadline, shutting down), CANCELED, BACKEND (the engine failed) or OTHER (the request itself was bad).
const char* failure_reason(Outcome o);

// Audio as a client sends it: an encoded file (bytes only read during submit), or samples at a rate.
struct EncodedAudio {
  std::string_view bytes;
};
struct PcmAudio {
  std::vector<float> samples;  // mono
  double sample_rate = 0;
};
using AudioInput = std::variant<EncodedAudio, PcmAudio>;

// The HTTP header (and gRPC metadata key, in lower case) of Submission::fault.
inline constexpr std::string_view kFaultHeader = "X-Steno-Fault";
// The HTTP header (and gRPC trailing metadata key, in lower case) of each of TranscriptionResponse::warnings.
inline constexpr std::string_view kWarningHeader = "X-Steno-Warning";

// A transcription's words as they are made (Submission::on_words): the next stretch of the transcript, in order, on
// the recording's timeline, each time the pieces before it are done. Called on a core thread, never after the
// answer's AnswerFn has started; must not block (a front end queues the bytes to send).
using WordsFn = std::function<void(const asr::Transcript& next)>;

// A request from any front end. The core resolves the model, decodes and checks the audio (on the caller's
// thread: front ends call submit from their work pools, never from an I/O thread), then queues it.
struct Submission {
  std::string id;     // for logs ("req-42", "grpc-7")
  std::string model;  // as the client sent it: a served name or an alias; "" = the default model, if allowed
  bool default_model_allowed = false;  // OpenAI: a missing `model` means the default; KServe names one always
  // What the client asks for (ModelInfo::task): the default model is the first of this task, and a model of
  // another task is refused (kInvalidInput).
  std::string task = "transcription";
  // Who spoke too (a transcription only): the same audio also goes to this diarization model ("" = the first one
  // served), side by side with the transcription, each in its own model's batcher; the one answer carries both
  // the transcript and the diarization, or the first failure of either. nullopt = the transcription alone.
  std::optional<std::string> diarizer;
  AudioInput audio;
  std::string audio_field = "file";  // the request field that holds the audio (errors name it): "file", "audio"
  // Lower values are served first (Triton's convention: 1 is the highest priority; 0 = the default level).
  int priority = 0;
  Clock::time_point received = Clock::now();              // when the front end got the request
  Clock::time_point deadline = Clock::time_point::max();  // work not started by then is dropped
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  // Called with each stretch of the transcript as soon as it and everything before it is done (a long recording
  // runs as pieces: ModelInfo::piece_seconds); null: the answer alone. A request run whole calls it once, before
  // its answer. The answer's transcript is still the whole.
  WordsFn on_words;
  // Test-only fault injection (`steno serve --enable-fault-injection`): the request tag as sent (HTTP header or
  // gRPC metadata X-Steno-Fault), "" for none. Ignored unless enabled; a bad tag is then kInvalidInput.
  std::string fault;
  // Set when the front end found the request malformed before it had audio (a bad tensor, a bad parameter): the
  // core answers it with this error, counted against the model like every other failure.
  std::optional<ServeError> refused;
};

// The time a successful request spent in each stage (Triton's names where it has them).
struct StageDurations {
  double queue_ms = 0;    // submit -> batch start: time in the batcher's queue (Triton's queue duration)
  double compute_ms = 0;  // the batch's features + encoder + decoder + detokenize
  double features_ms = 0, encoder_ms = 0, decoder_ms = 0, detokenize_ms = 0;
};

// Who spoke when in one request's audio: the answer of a diarization model (ModelInfo::task "diarization").
// Speakers are the model's outputs, numbered in the order they first speak.
struct SpeakerSegmentResult {
  int speaker = 0;
  double start = 0;  // seconds
  double end = 0;
};
struct DiarizationResult {
  int num_speakers = 0;        // the model's outputs, heard or not
  double frame_seconds = 0;    // of `probs`
  int64_t frames = 0;
  std::vector<float> probs;    // [frames, num_speakers]: speaker probabilities (for speakers of words)
  std::vector<SpeakerSegmentResult> segments;  // after the model's post-processing, in time order
};

struct TranscriptionResponse {
  Outcome outcome = Outcome::kOk;
  std::string message;       // for everything but kOk: what happened, for the client
  std::string param;         // the request field at fault, if any
  double retry_after_s = 0;  // kQueueFull: a hint for Retry-After
  std::string model;         // the served model's name (an unknown one: the name as sent)
  asr::Transcript transcript;  // kOk from a transcription model
  std::optional<DiarizationResult> diarization;  // kOk from a diarization model, or with Submission::diarizer
  StageDurations durations;
  int batch_size = 0;            // the batch this request ran in
  double audio_seconds = 0;      // of the decoded audio (0 when it was not decoded)
  double input_ms = 0;           // decoding and checking the audio
  // What the client should know although it was served: audio that ended before its header said ("truncated:
  // ..."). Front ends pass them on (HTTP: the x-steno-warning header and a `warnings` field).
  std::vector<std::string> warnings;

  bool ok() const { return outcome == Outcome::kOk; }
  ServeError error() const { return ServeError(outcome, message, param, retry_after_s); }  // !ok() only
};

// Called exactly once per submission. Its run time counts as the request's compute_output (rendering the answer).
using AnswerFn = std::function<void(TranscriptionResponse)>;

// A served model as clients and front ends see it.
struct ModelInfo {
  std::string name;                  // as clients address it
  std::string version = "1";         // KServe's model version
  std::vector<std::string> aliases;  // other names clients may use for it (every protocol)
  std::string task = "transcription";  // what it answers: "transcription" or "diarization"
  std::string platform;              // KServe platform: "steno_fastconformer_tdt", "steno_sortformer"
  bool on_gpu = false;               // KServe instance kind: KIND_GPU or KIND_CPU
  std::string device;                // "cpu", "cuda:0"
  std::string share;                 // how its executors share the device: lanes, processes, mps, green
  int executors = 0;                 // lanes or worker processes
  int max_batch_size = 0;
  int64_t max_queue_delay_us = 0;
  double max_audio_seconds = 0;      // longer audio is refused (kOverLimit)
  // A transcription longer than this runs as pieces of at most this many seconds, cut in pauses, each queued
  // beside other requests' work (serve/piecewise.h); 0: every request runs whole.
  double piece_seconds = 0;
  int pieces_in_flight = 0;  // of one request at once; 0: serve/piecewise.h's default for the device
  int sample_rate = 16000;           // what the model hears (audio at other rates is resampled)
};

// One model's statistics at one moment, in the shape of KServe's statistics extension (Triton's names).
struct StatDuration {
  uint64_t count = 0, ns = 0;
};
struct BatchSizeStats {
  int batch_size = 0;
  StatDuration compute_input, compute_infer, compute_output;
};
struct ModelStatsSnapshot {
  std::string name;
  std::string version = "1";
  uint64_t last_inference_ms = 0;  // since the epoch; 0 = never
  uint64_t inference_count = 0;    // requests run
  uint64_t execution_count = 0;    // batches run
  StatDuration success, fail, queue, compute_input, compute_infer, compute_output;
  std::vector<BatchSizeStats> batches;  // by increasing batch size
};

// What front ends call. Implemented by the inference core; thread-safe.
class TranscriptionService {
 public:
  virtual ~TranscriptionService() = default;
  virtual void submit(Submission submission, AnswerFn answer) = 0;
  // The served models; the first is the default.
  virtual std::vector<ModelInfo> models() const = 0;
  // Ready: taking requests, and every model has an executor up to run them (an orchestrator routes to it).
  virtual bool ready() const = 0;
  // Live: no model has been without an executor for longer than the service allows (its devices faulted for
  // good, its workers cannot start): an orchestrator then restarts the process. A service that cannot tell is.
  virtual bool live() const { return true; }
  // Stops taking requests, finishes what is queued and running, then returns.
  virtual void drain() = 0;
  // Statistics of the named (served) models, in order.
  virtual std::vector<ModelStatsSnapshot> statistics(const std::vector<std::string>& models) const = 0;
  // The metrics in Prometheus' text exposition format (the body of GET /metrics).
  virtual std::string render_metrics() const = 0;
};

// The index of the model `name` means among `models`: a served name or an alias of one (exact, case-sensitive);
// "" is the default where `default_allowed`: the first model, or with `task` the first model of that task.
// nullopt when there is none.
std::optional<size_t> find_model_index(std::span<const ModelInfo> models, std::string_view name,
                                       bool default_allowed, std::string_view task = {});

// The served model a client means by `name`: a served name or an alias of one (exact, case-sensitive); "" is the
// default model where `default_allowed`. Anything else throws kModelNotFound listing what is served.
ModelInfo resolve_model(const TranscriptionService& service, std::string_view name, bool default_allowed);
// The kModelNotFound error for `name`, listing `models` with their aliases.
ServeError unknown_model(std::span<const ModelInfo> models, std::string_view name);

}  // namespace steno::serve
