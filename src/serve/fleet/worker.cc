#include "steno/serve/fleet/worker.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "steno/asr/model.h"
#include "steno/diar/sortformer_model.h"
#include "core/cuda_fault.h"
#include "core/nvml.h"
#include "serve/lanes.h"
#include "serve/fleet/fault_injection.h"
#include "serve/fleet/framed_socket.h"
#include "serve/fleet/shared_pcm.h"
#include "steno/serve/fleet/shared_weights.h"

namespace steno::serve::fleet {
namespace {

uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return kMemoryNotReported;
  return resident_pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// The device memory NVML attributes to this process (weights, the context's pool, CUDA's own): not reported on
// the CPU, or where NVML cannot be used (said once in the log).
uint64_t device_bytes(const Device& device) {
  if (device.is_cpu()) return kMemoryNotReported;
  std::string why;
  const std::optional<uint64_t> bytes = nvml::process_device_memory(static_cast<int>(::getpid()), &why);
  if (bytes) return *bytes;
  static std::once_flag said;
  std::call_once(said, [&] { spdlog::warn("worker device memory not reported: {}", why); });
  return kMemoryNotReported;
}

// Sends a heartbeat every interval until stopped or the server is gone.
class HeartbeatThread {
 public:
  HeartbeatThread(FramedSocket& socket, std::chrono::milliseconds interval, Device device)
      : socket_(socket), interval_(interval), device_(device), thread_([this] { run(); }) {}
  ~HeartbeatThread() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
      const Heartbeat beat{resident_bytes(), device_bytes(device_)};
      try {
        socket_.send(beat);
      } catch (const Error& e) {
        spdlog::debug("worker heartbeats stop: {}", e.what());
        return;  // the batch loop sees the closed socket and exits
      }
    }
  }

  FramedSocket& socket_;
  std::chrono::milliseconds interval_;
  Device device_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is set up
};

// Faults that end the process (or never return) happen before the batch runs; `oom` is thrown from run_batch.
void apply_fatal_faults(const RunBatch& batch, const WorkerOptions& options) {
  bool crash = false, hang = false, device_fault = false;
  for (const ClipSpan& c : batch.clips) {
    crash = crash || c.fault == InjectedFault::kCrash;
    hang = hang || c.fault == InjectedFault::kHang;
    device_fault = device_fault || c.fault == InjectedFault::kDeviceFault;
  }
  if (!crash && !hang && !device_fault) return;
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // an injected crash leaves no core file behind
  if (crash) {
    spdlog::error("worker {}: injected crash in a batch of {}", options.index, batch.clips.size());
    std::abort();
  }
  if (device_fault) {
    ops::Context ctx = options.device.is_cpu() ? ops::Context::cpu(1) : ops::Context::cuda(options.device.index);
    inject_device_fault(ctx);
  }
  if (hang) {
    spdlog::error("worker {}: injected hang in a batch of {}", options.index, batch.clips.size());
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
}

// A batch that failed because the CUDA context broke (a kernel fault here, or under MPS in any client of the GPU)
// is not the requests' failure: this process can run nothing more, so it exits and supervision replays the batch
// on a fresh worker (under MPS after restarting the group).
void exit_if_device_faulted(const WorkerOptions& options, const char* what) {
  if (options.device.is_cpu()) return;
  const std::string fault = steno::cuda::device_fault(options.device.index);
  if (fault.empty()) return;
  spdlog::error("worker {}: the batch failed ({}) and the CUDA context is broken ({}): exiting", options.index, what,
                fault);
  std::_Exit(kDeviceFaultExitCode);
}

Message run_batch(BatchRunner& runner, const RunBatch& batch, UniqueFd pcm_fd, const WorkerOptions& options) {
  const SharedPcm pcm = SharedPcm::map(std::move(pcm_fd), batch.clips);  // a bad span is the server's bug: throws
  apply_fatal_faults(batch, options);
  try {
    if (batch.clips.size() > 1)
      for (const ClipSpan& c : batch.clips)
        if (c.fault == InjectedFault::kOom)
          fail(ErrorCode::kResourceExhausted, "injected out-of-memory in a batch of {}", batch.clips.size());
    std::vector<std::span<const float>> clips;
    clips.reserve(batch.clips.size());
    for (const ClipSpan& c : batch.clips) clips.push_back(pcm.clip(c));
    BatchResult result;
    result.batch_id = batch.batch_id;
    BatchOutput out = runner.run(clips, &result.timings);
    result.transcripts = std::move(out.transcripts);
    result.diarizations = std::move(out.diarizations);
    return result;
  } catch (const Error& e) {
    exit_if_device_faulted(options, e.what());
    // Cached device memory goes back before the server retries the batch in halves, so that they find it.
    if (e.code() == ErrorCode::kResourceExhausted) runner.release_cached_memory();
    return BatchFailed{batch.batch_id, e.code(), e.what()};
  } catch (const std::exception& e) {
    exit_if_device_faulted(options, e.what());
    return BatchFailed{batch.batch_id, ErrorCode::kInternal, e.what()};
  }
}

// Sends the batch's answer. One larger than the protocol allows (encode_frame refuses it before any byte goes)
// becomes a failure of that batch: the worker goes on.
void send_reply(FramedSocket& socket, const Message& reply, uint64_t batch_id) {
  const auto no_limit = std::chrono::milliseconds(-1);
  try {
    socket.send(reply, -1, no_limit);
  } catch (const PeerClosed&) {
    throw;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) throw;
    socket.send(BatchFailed{batch_id, ErrorCode::kOutOfRange, e.what()}, -1, no_limit);
  }
}

}  // namespace

int run_worker(const WorkerOptions& options) {
  // Set before exec by the server too; again here for a worker started by other means.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  FramedSocket socket(UniqueFd(options.socket_fd), kMaxRequestPayload);

  asr::ModelOverrides overrides;
  overrides.device = options.device;
  overrides.dtype = options.dtype;
  overrides.fp8_linears = options.fp8_linears;
  // A diarization model's worker serves diarizations (its weights are its own: --share-weights is for ASR models).
  WorkerWeights weights;
  std::unique_ptr<BatchRunner> runner;
  const LongForm long_form{options.long_audio_seconds, options.long_attention};
  if (asr::model_type_of(options.model_dir) == "sortformer") {
    auto model = diar::SortformerModel::load(options.model_dir, {options.device, options.dtype});
    runner = diarizer_runners(std::move(model), options.threads, options.gemm, long_form)(options.index);
  } else {
    weights = load_worker_model(options.model_dir, overrides, options.weights, options.index);
    runner = transcriber_runners(weights.model, options.threads, options.gemm, long_form,
                                 options.decoding.resolve(weights.model->config(), options.model_dir))(options.index);
  }

  Hello hello;
  hello.pid = static_cast<int32_t>(::getpid());
  hello.worker_index = options.index;
  hello.weights_shared = weights.shared;
  hello.weights_bytes = weights.bytes;
  hello.weights_layout = weights.layout;
  hello.weights_note = weights.note;
  socket.send(hello, weights.export_fd.get());  // the shared copy's descriptor, when this worker made it
  weights.export_fd.reset();                    // the server holds it now
  HeartbeatThread heartbeats(socket, options.heartbeat, options.device);
  spdlog::info("worker {} (pid {}) ready: {} on {}{}", options.index, ::getpid(), options.model_dir,
               options.device.str(), weights.shared ? " (shared weights)" : "");
  for (;;) {
    std::optional<FramedSocket::Received> in;
    try {
      in = socket.receive(std::chrono::milliseconds(-1));
    } catch (const PeerClosed&) {
      spdlog::info("worker {}: the server closed the connection; exiting", options.index);
      return 0;
    } catch (const ProtocolError& e) {
      spdlog::error("worker {}: protocol error from the server: {}; exiting", options.index, e.what());
      return 2;
    }
    if (!in) continue;
    auto* batch = std::get_if<RunBatch>(&in->message);
    if (batch == nullptr) {
      spdlog::error("worker {}: unexpected {} message from the server; exiting", options.index,
                    message_type_name(type_of(in->message)));
      return 2;
    }
    Message reply;
    try {
      reply = run_batch(*runner, *batch, std::move(in->fd), options);
    } catch (const ProtocolError& e) {
      spdlog::error("worker {}: bad batch from the server: {}; exiting", options.index, e.what());
      return 2;
    } catch (const Error& e) {  // the shared memory could not be mapped
      reply = BatchFailed{batch->batch_id, e.code(), e.what()};
    }
    try {
      send_reply(socket, reply, batch->batch_id);
    } catch (const PeerClosed&) {
      return 0;
    }
  }
}

}  // namespace steno::serve::fleet
