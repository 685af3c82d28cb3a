#include "serve/fleet/worker_executor.h"

#include <spdlog/spdlog.h>

#include <fmt/format.h>
#include <algorithm>

#include "steno/core/error.h"
#include "serve/fleet/shared_pcm.h"

namespace steno::serve::fleet {

using std::chrono::milliseconds;

struct WorkerExecutor::Lost {
  RestartReason reason;  // kExit stands for "it went away": refined by its exit status when it is ended
  std::string why;
};

WorkerExecutor::WorkerExecutor(int index, std::shared_ptr<WorkerSupervisor> supervisor)
    : index_(index), name_(fmt::format("worker {}", index)), supervisor_(std::move(supervisor)) {}

int WorkerExecutor::max_batch_size() const { return static_cast<int>(kMaxClipsPerBatch); }

std::optional<std::string> WorkerExecutor::start() {
  std::optional<std::string> error = supervisor_->start(index_);
  if (!error) last_frame_ = Clock::now();
  return error;
}

bool WorkerExecutor::up() const { return supervisor_->process(index_) != nullptr; }

milliseconds WorkerExecutor::silence_limit() const {
  const WorkerFleetConfig& c = supervisor_->config();
  return c.heartbeat_interval * c.missed_heartbeats;
}

milliseconds WorkerExecutor::idle_check_interval() const { return supervisor_->config().heartbeat_interval; }

void WorkerExecutor::on_heartbeat(const Heartbeat& beat) {
  last_frame_ = Clock::now();
  if (FleetMetrics* m = supervisor_->metrics()) m->set_worker_memory(index_, beat.host_rss_bytes, beat.device_bytes);
}

Loss WorkerExecutor::check_idle() {
  if (supervisor_->taken_down_with_group(index_))
    return supervisor_->lose(index_, RestartReason::kGroup, "killed to restart its group", 0);
  WorkerProcess& worker = *supervisor_->process(index_);
  try {
    while (auto in = worker.socket().receive(milliseconds(0))) {
      const auto* beat = std::get_if<Heartbeat>(&in->message);
      if (beat == nullptr)
        throw ProtocolError(fmt::format("a {} message while idle", message_type_name(type_of(in->message))));
      on_heartbeat(*beat);
    }
  } catch (const PeerClosed&) {
    return supervisor_->lose(index_, RestartReason::kExit, "it closed its connection while idle", 0);
  } catch (const ProtocolError& e) {
    return supervisor_->lose(index_, RestartReason::kProtocol, e.what(), 0);
  } catch (const Error& e) {
    return supervisor_->lose(index_, RestartReason::kExit, e.what(), 0);
  }
  const auto silence = std::chrono::duration_cast<milliseconds>(Clock::now() - last_frame_);
  if (silence > silence_limit())
    return supervisor_->lose(index_, RestartReason::kHang,
                             fmt::format("no heartbeat for {} ms while idle", silence.count()), 0);
  return Loss::kNone;
}

BatchRun WorkerExecutor::run(const Batch& batch) {
  const WorkerFleetConfig& config = supervisor_->config();
  const size_t n = batch.requests.size();
  WorkerProcess& worker = *supervisor_->process(index_);
  RunBatch message;
  message.batch_id = supervisor_->next_batch_id();
  std::optional<SharedPcm> pcm;
  try {
    std::vector<std::span<const float>> clips;
    clips.reserve(n);
    for (const auto& r : batch.requests) clips.emplace_back(r->pcm);
    pcm.emplace(SharedPcm::create(clips, &message.clips));
  } catch (const Error& e) {
    return BatchRun::failed(ErrorCode::kInternal, fmt::format("cannot share a batch of {} with {}: {}", n, name_,
                                                              e.what()));
  }
  for (size_t i = 0; i < n; ++i) message.clips[i].fault = batch.requests[i]->fault;
  const double audio_s = audio_seconds(batch);
  const auto budget = std::max<milliseconds>(
      config.batch_timeout_floor,
      milliseconds(static_cast<int64_t>(audio_s * config.batch_timeout_per_audio_second * 1000)));
  const Clock::time_point start = Clock::now();
  auto lost = [&](RestartReason reason, const std::string& why) {
    const Loss loss = supervisor_->lose(index_, reason, why, n);
    return BatchRun::lost(loss, reason == RestartReason::kHang ? "hung" : "crashed", why);
  };
  try {
    worker.socket().send(message, pcm->fd(), silence_limit());
  } catch (const PeerClosed&) {
    return lost(RestartReason::kExit, "it closed its connection");
  } catch (const Error& e) {
    return lost(RestartReason::kHang, fmt::format("it did not take the batch: {}", e.what()));
  }
  pcm.reset();  // the worker holds the memory now; the server's mapping is not needed any more

  auto answer = await_answer(message.batch_id, n, start + budget);
  if (auto* result = std::get_if<BatchResult>(&answer)) {
    if (!result->diarizations.empty()) return BatchRun::diarized(std::move(result->diarizations), result->timings);
    return BatchRun::done(std::move(result->transcripts), result->timings);
  }
  if (auto* failed = std::get_if<BatchFailed>(&answer)) return BatchRun::failed(failed->code, failed->message);
  Lost& l = std::get<Lost>(answer);
  if (l.reason == RestartReason::kHang && Clock::now() >= start + budget)
    l.why = fmt::format("a batch of {:.1f} s of audio ran past its deadline of {:.1f} s", audio_s,
                        std::chrono::duration<double>(budget).count());
  return lost(l.reason, l.why);
}

std::variant<BatchResult, BatchFailed, WorkerExecutor::Lost> WorkerExecutor::await_answer(
    uint64_t batch_id, size_t clips, Clock::time_point deadline) {
  WorkerProcess& worker = *supervisor_->process(index_);
  const milliseconds limit = silence_limit();
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (now >= last_frame_ + limit)
      return Lost{RestartReason::kHang,
                  fmt::format("no heartbeat for {} ms during a batch",
                              std::chrono::duration_cast<milliseconds>(now - last_frame_).count())};
    if (now >= deadline) return Lost{RestartReason::kHang, "its batch ran past its deadline"};
    try {
      const auto wait = std::chrono::ceil<milliseconds>(std::min(deadline, last_frame_ + limit) - now);
      auto in = worker.socket().receive(std::max(wait, milliseconds(1)));
      if (!in) continue;
      last_frame_ = Clock::now();
      if (const auto* beat = std::get_if<Heartbeat>(&in->message)) {
        on_heartbeat(*beat);
        continue;
      }
      if (auto* result = std::get_if<BatchResult>(&in->message)) {
        // One answer per clip: transcripts or diarizations, not both.
        const size_t answers = result->transcripts.size() + result->diarizations.size();
        if (result->batch_id != batch_id || answers != clips ||
            (!result->transcripts.empty() && !result->diarizations.empty()))
          throw ProtocolError(fmt::format("a result for batch {} with {} transcripts and {} diarizations, expected "
                                          "batch {} of {}",
                                          result->batch_id, result->transcripts.size(), result->diarizations.size(),
                                          batch_id, clips));
        return std::move(*result);
      }
      if (auto* failed = std::get_if<BatchFailed>(&in->message)) {
        if (failed->batch_id != batch_id)
          throw ProtocolError(fmt::format("a failure for batch {}, expected batch {}", failed->batch_id, batch_id));
        return std::move(*failed);
      }
      throw ProtocolError(fmt::format("a {} message during a batch", message_type_name(type_of(in->message))));
    } catch (const PeerClosed&) {
      if (supervisor_->taken_down_with_group(index_)) return Lost{RestartReason::kGroup, "killed to restart its group"};
      return Lost{RestartReason::kExit, "it closed its connection during a batch"};
    } catch (const ProtocolError& e) {
      return Lost{RestartReason::kProtocol, e.what()};
    } catch (const Error& e) {
      return Lost{RestartReason::kExit, e.what()};
    }
  }
}

void WorkerExecutor::stop() { supervisor_->stop(index_); }

std::vector<std::unique_ptr<Executor>> worker_executors(WorkerFleetConfig config,
                                                        std::unique_ptr<FleetMetrics> metrics) {
  auto supervisor = std::make_shared<WorkerSupervisor>(std::move(config), std::move(metrics));
  std::vector<std::unique_ptr<Executor>> out;
  for (int i = 0; i < supervisor->size(); ++i) out.push_back(std::make_unique<WorkerExecutor>(i, supervisor));
  return out;
}

}  // namespace steno::serve::fleet
