#include "steno/ops/fault.h"

#include "check.h"
#include "steno/core/error.h"

#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {

void trap_device(Context& ctx) {
  if (ctx.device().is_cpu())
    fail(ErrorCode::kInvalidArgument, "trap_device: a CPU context has no device to fault");
  STENO_CUDA_KERNEL("trap_device", cuda::trap_device(ctx));
}

}  // namespace steno::ops
