// The server's side of --share-weights (shared_weights.h has the workers' side): where the fleet's one device copy
// of the weights stands, and what each start of a worker is told.
//
//   - The first worker to start makes the copy (role kExport); starts meanwhile wait for it, no longer than a
//     worker may take to start. Its Hello carries the copy's descriptor, which the broker then holds.
//   - Every later start maps that copy (kImport) through a duplicate of the held descriptor.
//   - A creator that could not make the copy leaves every worker on private weights (until drop()); one that did
//     not start at all lets the next start try. drop() (a group restart under MPS: the copy may belong to the
//     context that broke) forgets the copy, and the next worker started makes a new one.
// Where sharing does not work out, workers load private weights and the server says why; the fleet never fails
// for it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "serve/fleet/fleet_metrics.h"
#include "steno/serve/fleet/shared_weights.h"
#include "steno/core/unique_fd.h"
#include "serve/fleet/wire.h"

namespace steno::serve::fleet {

// How a worker gets its weights, for its command line: kImport's memory is descriptor kWorkerWeightsFd.
struct WeightsArgs {
  WeightsRole role = WeightsRole::kPrivate;
  uint64_t bytes = 0;   // kImport: the shared copy's size and identity; kExport: an earlier copy's, or 0
  uint64_t layout = 0;
};

class SharedWeightsBroker {
 public:
  // `enabled` false: every start gets private weights. `wait_limit` bounds a start's wait for the creator.
  SharedWeightsBroker(bool enabled, std::chrono::milliseconds wait_limit, FleetMetrics* metrics);

  // How one start of a worker gets its weights: the arguments, and for kImport a descriptor for the child to
  // inherit (closed by the caller once the child is spawned).
  struct Start {
    WeightsArgs args;
    UniqueFd fd;
  };
  Start begin(int worker);
  // How that start went: `hello` null when the worker did not start; `fd` the descriptor its Hello carried.
  // True when the worker's weights are the shared copy.
  bool end(int worker, pid_t pid, Start& start, const Hello* hello, UniqueFd fd);
  // Forgets the copy (a group restart): the next worker started makes a new one.
  void drop();
  // Logs how many of the fleet's workers share the copy, once all have started.
  void report(int sharing, int workers);

 private:
  // kCreating while a worker makes the copy (other starts wait for it); kShared with its descriptor held;
  // kPrivate when its creator could not make it (until drop()).
  enum class State { kOff, kNeedCreator, kCreating, kShared, kPrivate };

  std::chrono::milliseconds wait_limit_;
  FleetMetrics* metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  State state_;
  UniqueFd fd_;
  uint64_t bytes_ = 0;
  uint64_t layout_ = 0;
};

}  // namespace steno::serve::fleet
