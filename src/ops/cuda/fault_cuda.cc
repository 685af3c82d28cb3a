// ops::trap_device on CUDA: the launch only; the fault surfaces at the stream's next synchronization.
#include "fault_launch.h"
#include "kernels.h"

namespace steno::ops::cuda {

void trap_device(Context& ctx) { launch_trap(stream_of(ctx)); }

}  // namespace steno::ops::cuda
