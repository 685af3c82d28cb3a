// A kernel that records which SM each block ran on (%smid), for green_context_cuda_test.cc: the one direct way to
// see that a green context's kernels stay on its SMs.
#include <cuda_runtime.h>

namespace steno::ops::cuda_testing {

namespace {
__global__ void record_smid(int* out, long long spin_cycles) {
  unsigned smid = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  // Keep the block resident a while, so that the scheduler spreads the grid over every SM it may use.
  const long long start = clock64();
  while (clock64() - start < spin_cycles) {
  }
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int>(smid);
}
}  // namespace

// Launches `blocks` blocks on `stream` (a cudaStream_t); out_device receives one SM id per block.
cudaError_t launch_record_smid(void* stream, int blocks, int* out_device) {
  record_smid<<<blocks, 32, 0, static_cast<cudaStream_t>(stream)>>>(out_device, 200000);
  return cudaGetLastError();
}

}  // namespace steno::ops::cuda_testing
