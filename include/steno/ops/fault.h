// A deliberate device fault, for tests of supervision only (steno serve --enable-fault-injection): what a broken
// kernel does to a process's CUDA context.
#pragma once

#include "steno/ops/context.h"

namespace steno::ops {

// Queues a kernel that executes a trap instruction on ctx's stream: the CUDA context takes a sticky error that
// every later call of the process reports (under MPS, every client of the GPU's server sees a fault). CPU
// contexts have no device to fault: kInvalidArgument.
void trap_device(Context& ctx);

}  // namespace steno::ops
