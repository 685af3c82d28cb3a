// Whether this process's CUDA context still works (worker processes exit when it does not).
#pragma once

#include <string>

namespace steno::cuda {

// Empty while this process's CUDA context on `device` works (or there is no CUDA); else the error that broke it.
// Waits for the device's work. A kernel fault (illegal address, trap; under MPS, a fault of any client of the GPU)
// is sticky: every later call fails with it, and only a new process gets a working context again.
std::string device_fault(int device);

}  // namespace steno::cuda
