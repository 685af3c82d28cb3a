// A request inside the inference core, from admission to its answer: decoded audio, scheduling, and the callback
// that answers the client. The batcher queues these; executors run batches of them; one Completion (completion.h)
// finishes each exactly once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "steno/serve/service.h"

namespace steno::serve {

// TranscriptionRequest::pcm's rate.
inline constexpr int kPcmSampleRate = 16000;

// Test-only (`steno serve --enable-fault-injection`, Submission::fault): what the worker process running a batch
// that holds the request does on purpose, so that supervision is tested for real:
//   crash         abort() in the middle of the batch
//   hang          the batch never finishes (heartbeats go on: the batch deadline catches it)
//   device-fault  a device fault on the worker's device (a trapping kernel on CUDA, SIGBUS on the CPU)
//   oom           the batch fails as out of memory when it holds more than one request (alone it runs)
enum class InjectedFault : uint8_t { kNone, kCrash, kHang, kDeviceFault, kOom };
// "crash", "hang", "device-fault", "oom" (case-sensitive); nullopt for anything else.
std::optional<InjectedFault> parse_injected_fault(std::string_view name);
const char* injected_fault_name(InjectedFault fault);

struct TranscriptionRequest {
  std::string id;     // unique per request, for logs ("req-42")
  std::string model;  // the served model's name (aliases resolved)
  std::vector<float> pcm;  // 16 kHz mono in [-1, 1]
  // Lower values are served first (Triton's convention: 1 is the highest priority; 0 = the default level).
  int priority = 0;
  Clock::time_point arrival = Clock::now();               // when the front end received it
  Clock::time_point deadline = Clock::time_point::max();  // work not started by then is dropped
  // Set by the front end when the client goes away; queued work is then dropped without running.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  double input_ms = 0;                // decoding and checking the audio
  std::vector<std::string> warnings;  // handed to the client with the answer

  InjectedFault fault = InjectedFault::kNone;  // tests only; kNone unless fault injection is enabled
  // How many times a batch holding this request was lost with its executor (a worker process that crashed or
  // hung): the executor pool fails a request alone once it reaches 2 instead of replaying it again.
  int executor_faults = 0;

  AnswerFn done;  // called exactly once, through the core's RequestCompleter
  // The words as they are made (Submission::on_words), called by the core before `done`; null: none wanted.
  WordsFn on_words;
  // One piece of a long request (serve/piecewise.h): counted as an inference, not as a request of its own.
  bool piece = false;
  bool ran_as_pieces = false;  // the whole of such pieces: its inferences were counted piece by piece
};

}  // namespace steno::serve
