// The trapping kernel behind ops::trap_device (tests of supervision only).
#include "fault_launch.h"

namespace steno::ops::cuda {

namespace {

__global__ void trap_kernel() { __trap(); }

}  // namespace

void launch_trap(cudaStream_t stream) { trap_kernel<<<1, 1, 0, stream>>>(); }

}  // namespace steno::ops::cuda
