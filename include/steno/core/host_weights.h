// A model's weights widened to f32 on the host at load, in one block of memory.
//
// The bundled model stores f16 and the CPU engine computes in f32: its load writes 30 MB of fresh memory. Tensor by
// tensor (335 allocations, most under 2 MB) that is ~7,500 page faults of 4 KiB, and on a virtual machine a fault is
// dear (perf on this project's 2-core VM: a third of a 1 s clip's whole `steno transcribe` went to the load's
// faults). One block asked for transparent huge pages (MADV_HUGEPAGE: the kernel's default mode honours it) faults
// in 2 MiB pages instead: ~15.
#pragma once

#include <vector>

#include "steno/core/tensor.h"

namespace steno {

// Every tensor of `tensors` in f32 on the CPU: those already f32 as they are (shared, not copied), the f16 and bf16
// ones widened into one shared block that lives as long as any of the results. CPU tensors only.
std::vector<Tensor> widen_to_f32_in_one_block(const std::vector<Tensor>& tensors);

}  // namespace steno
