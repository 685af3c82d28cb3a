// The worker processes that fault together. Under MPS one client's fatal fault faults every client of the GPU's
// daemon, whichever model it serves: they all end, and none may start again until every one is gone and the
// daemon has been restarted, once. A fleet's supervisor (worker_supervisor.h) joins the group its
// WorkerFleetConfig names -- the transcription model's and the diarizer's fleets under one daemon share one -- or
// a group of its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace steno::serve::fleet {

class FaultGroup {
 public:
  // What a member fleet does for the group. Called with the group's lock held (so a member never leaves mid-call);
  // each takes only its own workers' locks.
  class Member {
   public:
    virtual ~Member() = default;
    // Kills every live worker but `except` (-1: none), marking each a victim of the group; drops shared weights.
    virtual void take_down(int except) = 0;
    virtual bool all_down() const = 0;
  };

  // `recover`: what makes the GPU take clients again once every worker is gone (MpsDaemon::restart); may be null.
  explicit FaultGroup(std::function<void()> recover = nullptr) : recover_(std::move(recover)) {}

  void join(Member* m);
  void leave(Member* m);  // before the member is destroyed
  // Worker `worker` of `from` faulted: every other worker of every member is taken down; a recovery is pending.
  void fault(Member* from, int worker);
  // Before a worker starts: returns at once unless a recovery is pending; else waits, at most `timeout`, until every
  // member's workers are down, and runs the recovery (once for the group, whichever start gets here first).
  void await_recovery(std::chrono::milliseconds timeout);
  // A worker went down: wakes a waiting recovery.
  void notify_down();
  // Between a fault and its recovery: a worker lost now went down with the group, whatever it died of -- under MPS
  // one that found its context broken by the fault may exit before the group's kill reaches it.
  bool faulting();

 private:
  std::function<void()> recover_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Member*> members_;
  bool recovering_ = false;
};

}  // namespace steno::serve::fleet
