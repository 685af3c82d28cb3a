// A long transcription served as pieces (asr/pieces.h) that join its model's batcher beside other requests' work,
// so that an hour of audio never makes a 10-second request wait for it:
//   - at most `window` pieces are queued or running at a time (enough to fill the model's executors), so the queue
//     never holds a recording's worth of pieces ahead of requests that arrive later;
//   - pieces queue one priority level behind the request's own: a short request that arrives while an hour runs
//     goes ahead of the pieces not yet started (strict priorities, as Triton's: under overload they wait);
//   - pieces share the request's cancellation flag and deadline: a client that goes away has its queued pieces
//     dropped and no more queued;
//   - the first piece that fails fails the request (no more are queued; those running finish and are dropped);
//   - each stretch of pieces done in order goes to the request's on_words; the answer is the joined transcript.
// The request is counted once in its model's statistics; its pieces count as inferences and batches (they are
// what ran), not as requests.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>

#include "serve/batcher.h"
#include "serve/completer.h"

namespace steno::serve {

struct PieceSettings {
  double seconds = 10;   // longest piece (ModelInfo::piece_seconds)
  size_t window = 16;    // pieces queued or running at a time
  int default_priority_level = 5;  // the model's batcher's, for "one level behind" a request of priority 0
  bool skip_silent = false;        // a silent piece (asr::is_silent) gets no words without running: the VAD is on
};

// The long requests running as pieces, so that draining can stop them at a piece boundary and wait for them.
class PiecewiseRuns {
 public:
  // Held by a run until it has answered.
  std::shared_ptr<void> enter();
  // From now on no run queues another piece (each fails kShuttingDown once its running pieces are done); returns
  // when every run has answered. The batchers must still be taking work.
  void stop_and_wait();
  bool stopping() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable idle_;
  size_t running_ = 0;
  bool stopping_ = false;
};

// A model's settings: ModelInfo::piece_seconds, and its pieces_in_flight or the device's default (one per executor
// on a CPU, where a batch costs the sum of its clips; executors x max_batch / 2 on a GPU, where batches are cheap).
PieceSettings piece_settings(const ModelInfo& info, int default_priority_level, bool skip_silent);

// Whether `request` (its audio as it will run) is long enough to run as pieces of at most `piece_seconds`.
bool runs_in_pieces(const TranscriptionRequest& request, double piece_seconds);

// Runs `whole` as pieces through `batcher`; its answer goes through `complete` (the model's completer) once.
void run_in_pieces(std::unique_ptr<TranscriptionRequest> whole, DynamicBatcher& batcher, RequestCompleter complete,
                   const PieceSettings& settings, PiecewiseRuns& runs);

}  // namespace steno::serve
