// The fleet's wire protocol between `steno serve` and its `steno worker` processes.
//
// Frames over a Unix stream socket: a 12-byte header -- magic "STNW", protocol version (u16), message type (u16),
// payload length (u32), all little-endian -- then the payload. A batch's PCM never travels on the socket: a
// RunBatch frame carries a memfd (SCM_RIGHTS, see framed_socket.h) holding every clip's samples, and the message
// says where each clip lies in it (shared_pcm.h).
//
//   server -> worker: RunBatch
//   worker -> server: Hello (once, when its model is loaded), Heartbeat (every interval, also during a batch),
//                     then one BatchResult or BatchFailed per RunBatch, with its batch id
// With --share-weights the first worker's Hello may carry a descriptor too: the device memory holding the
// fleet's one copy of the weights (shared_weights.h), which the server hands to the others.
//
// Decoding checks every size and count against the bytes actually present, so a corrupt or hostile frame is a
// ProtocolError (the connection is dropped), never a crash or an allocation larger than the frame itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "steno/asr/transcriber.h"
#include "steno/asr/transcript.h"
#include "steno/core/error.h"
#include "serve/request.h"

namespace steno::serve::fleet {

// 2: Hello says how the worker holds its weights (--share-weights). 3: BatchResult carries diarizations (a worker
// of the diarization model).
inline constexpr uint16_t kProtocolVersion = 3;
inline constexpr size_t kHeaderBytes = 12;
// The largest payloads each side accepts: a result holds text and timestamps of at most max_batch clips; a batch
// request is only the clips' places in the shared memory.
inline constexpr uint32_t kMaxResultPayload = 64u << 20;
inline constexpr uint32_t kMaxRequestPayload = 1u << 20;
inline constexpr uint32_t kMaxClipsPerBatch = 4096;

// A frame that breaks the protocol: the connection it came on cannot be trusted any further.
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& message) : Error(ErrorCode::kDataLoss, message) {}
};

enum class MessageType : uint16_t { kHello = 1, kHeartbeat = 2, kRunBatch = 3, kBatchResult = 4, kBatchFailed = 5 };
const char* message_type_name(MessageType t);

// The worker has loaded its model and takes batches. The weights_ fields matter with --share-weights only: the
// worker that made the shared copy sends its descriptor with this frame (weights_shared, and no descriptor, when
// it could not make one: weights_note says why).
struct Hello {
  int32_t pid = 0;
  int32_t worker_index = 0;
  bool weights_shared = false;  // its device weights are the fleet's shared copy (made by it, or mapped)
  uint64_t weights_bytes = 0;   // the bytes that copy holds (its layout's size; 0 when not shared)
  uint64_t weights_layout = 0;  // the copy's weights_identity (shared_weights.h), which importers must match
  std::string weights_note;     // why its weights are private although sharing was asked for ("" otherwise)
};
// The longest weights_note a worker sends (a driver error and what it means): a Hello stays small.
inline constexpr size_t kMaxWeightsNote = 4096;

// What a worker cannot measure (device memory where the context does not report it).
inline constexpr uint64_t kMemoryNotReported = UINT64_MAX;

// The worker is alive; sent every heartbeat interval by a thread of its own, so it keeps coming during a batch.
struct Heartbeat {
  uint64_t host_rss_bytes = kMemoryNotReported;  // resident set size of the worker process
  uint64_t device_bytes = kMemoryNotReported;    // device memory held by its context
};

// Where one clip lies in the batch's shared memory, in floats, and its injected fault (tests only).
struct ClipSpan {
  uint64_t offset = 0;
  uint64_t samples = 0;
  InjectedFault fault = InjectedFault::kNone;
};

struct RunBatch {
  uint64_t batch_id = 0;
  std::vector<ClipSpan> clips;
};

// One answer per clip, in the RunBatch's order: a transcript from a transcription model's worker, a diarization
// from a diarization model's (the other list empty).
struct BatchResult {
  uint64_t batch_id = 0;
  asr::StageTimings timings;
  std::vector<asr::Transcript> transcripts;
  std::vector<DiarizationResult> diarizations;
};

// The batch threw in the worker (the worker itself is fine): kResourceExhausted means "retry smaller".
struct BatchFailed {
  uint64_t batch_id = 0;
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

using Message = std::variant<Hello, Heartbeat, RunBatch, BatchResult, BatchFailed>;

MessageType type_of(const Message& m);

// The whole frame, header and payload. Throws kInvalidArgument if the payload would exceed the protocol's
// largest frame (kMaxResultPayload).
std::string encode_frame(const Message& m);

struct FrameHeader {
  MessageType type;
  uint32_t payload_bytes;
};
// Checks magic, version, type and that the length is at most `max_payload`. Throws ProtocolError.
FrameHeader decode_header(std::string_view header_bytes, uint32_t max_payload);
// Throws ProtocolError naming what is wrong (truncated, trailing bytes, a count larger than the payload, ...).
Message decode_payload(MessageType type, std::string_view payload);

}  // namespace steno::serve::fleet
