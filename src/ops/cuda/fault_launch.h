// Launcher of fault.cu (see launch.h).
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

void launch_trap(cudaStream_t stream);

}  // namespace steno::ops::cuda
