// The error every steno::cuda call gives in a build without the CUDA toolkit (cuda_stub.cc and the other stubs).
#pragma once

#include "steno/core/error.h"

namespace steno::cuda {

[[noreturn]] inline void not_built(const char* what) {
  fail(ErrorCode::kUnavailable, "{}: this steno was built without CUDA (configure with -DSTENO_WITH_CUDA=ON on a "
       "machine with the CUDA toolkit)", what);
}

}  // namespace steno::cuda
