// Launchers of fp8.cu (raw pointers, see launch.h), included by both fp8.cu and fp8_cuda.cc.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

// What is applied to each element before it is quantized.
enum class Fp8RowOp : uint8_t { kIdentity, kSilu };

// The longest row quantize_rows takes: 8 vectors of 16 bytes for each of 256 threads (16,384 16-bit values).
inline constexpr int64_t kMaxFp8RowElems16 = 8 * 8 * 256;

// q[r, :] = e4m3(op(x[r, :]) / scales[r]) with scales[r] = max |op(x[r, :])| / 448, one block per row, the row
// held in registers (read once). Needs cols a multiple of one 16-byte vector of dt, every pointer 16-byte aligned
// and the row no longer than kMaxFp8RowElems16 16-bit values (half as many f32); returns false otherwise,
// launching nothing.
bool launch_quantize_rows(Dt dt, Fp8RowOp op, const void* x, int64_t rows, int64_t cols, uint8_t* q, float* scales,
                          cudaStream_t stream);

}  // namespace steno::ops::cuda
