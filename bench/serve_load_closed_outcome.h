// One request of a closed-loop point, as it ended: shared by the HTTP point (serve_load_closed_loop.cc) and the
// gRPC one (serve_load_grpc.cc).
#pragma once

#include "serve_load_results.h"

namespace serve_load {

struct ClosedOutcome : Outcome {
  int conn = 0;
  double sent_ms = 0;  // since the window's start (negative in the warm-up); when it ended, if never written
};

}  // namespace serve_load
