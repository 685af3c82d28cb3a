#include "serve/fleet/shared_weights_broker.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

namespace steno::serve::fleet {

SharedWeightsBroker::SharedWeightsBroker(bool enabled, std::chrono::milliseconds wait_limit, FleetMetrics* metrics)
    : wait_limit_(wait_limit), metrics_(metrics), state_(enabled ? State::kNeedCreator : State::kOff) {
  if (metrics_) metrics_->set_shared_weight_bytes(0);
}

SharedWeightsBroker::Start SharedWeightsBroker::begin(int worker) {
  Start w;
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, wait_limit_, [&] { return state_ != State::kCreating; });
  switch (state_) {
    case State::kOff:
    case State::kPrivate: break;
    case State::kCreating:
      spdlog::warn("worker {}: the shared weights are still being made; it loads private weights", worker);
      break;
    case State::kNeedCreator:
      // After a group restart the size an earlier creator measured comes along: one of the same identity then
      // loads once instead of counting first.
      state_ = State::kCreating;
      w.args = WeightsArgs{WeightsRole::kExport, bytes_, layout_};
      break;
    case State::kShared: {
      // A copy of the descriptor: a group restart may close the held one while this worker is being spawned.
      const int fd = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
      if (fd < 0) {
        spdlog::warn("worker {}: cannot pass it the shared weights ({}); it loads private weights", worker,
                     std::strerror(errno));
        break;
      }
      w.fd = UniqueFd(fd);
      w.args = WeightsArgs{WeightsRole::kImport, bytes_, layout_};
      break;
    }
  }
  return w;
}

bool SharedWeightsBroker::end(int worker, pid_t pid, Start& start, const Hello* hello, UniqueFd fd) {
  start.fd.reset();
  bool shared = hello != nullptr && hello->weights_shared;
  if (start.args.role == WeightsRole::kImport && hello != nullptr && !hello->weights_shared)
    spdlog::warn("worker {} (pid {}) could not use the shared weights ({}): it loaded private weights", worker, pid,
                 hello->weights_note);
  if (start.args.role != WeightsRole::kExport) return shared;  // a descriptor it sent anyway is closed with `fd`
  std::lock_guard lock(mu_);
  if (hello == nullptr) {
    state_ = State::kNeedCreator;  // it did not start: the next worker to start makes the copy
  } else if (hello->weights_shared && fd.valid() && hello->weights_bytes > 0) {
    fd_ = std::move(fd);
    bytes_ = hello->weights_bytes;
    layout_ = hello->weights_layout;
    state_ = State::kShared;
    spdlog::info("worker {} (pid {}) made the shared copy of the weights: {:.1f} MiB", worker, pid,
                 static_cast<double>(bytes_) / (1 << 20));
  } else {
    shared = false;
    state_ = State::kPrivate;
    spdlog::warn("worker {} (pid {}) could not make a shared copy of the weights ({}): every worker loads private "
                 "weights",
                 worker, pid, hello->weights_note.empty() ? "it sent no descriptor" : hello->weights_note);
  }
  if (metrics_) metrics_->set_shared_weight_bytes(shared ? bytes_ : 0);
  cv_.notify_all();
  return shared;
}

void SharedWeightsBroker::drop() {
  std::lock_guard lock(mu_);
  // A copy being made now is left to its maker: killed with the group, its failed start asks for a new one.
  if (state_ != State::kShared && state_ != State::kPrivate) return;
  spdlog::warn("dropping the shared weights: the first worker restarted makes a new copy");
  fd_.reset();
  state_ = State::kNeedCreator;
  if (metrics_) metrics_->set_shared_weight_bytes(0);
}

void SharedWeightsBroker::report(int sharing, int workers) {
  std::lock_guard lock(mu_);
  if (state_ != State::kShared) return;  // the creator's warning said why
  const double mib = static_cast<double>(bytes_) / (1 << 20);
  spdlog::info("{} of {} workers share one device copy of the weights: {:.1f} MiB (saves ~{}x{:.1f} = {:.1f} MiB)",
               sharing, workers, mib, sharing - 1, mib, (sharing - 1) * mib);
}

}  // namespace steno::serve::fleet
