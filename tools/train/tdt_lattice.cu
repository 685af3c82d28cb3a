// The TDT alignment lattice (tools/train/tdt_loss.py's transducer_loglik) as one CUDA kernel: log-likelihood and
// its gradient with respect to every emission score, for training on the GPU machine.
//
// Why: the PyTorch lattice is a Python loop over frames, ~20 small kernels per frame forward and as many backward,
// and the loss alone measured 145-165 ms forward + backward on the H200, most of a 130-200 ms training step
// (tools/train/README.md, "Measured"). Here one block walks one utterance: alpha forward, beta backward, then
// every edge's gradient exp(alpha(src) + score + beta(dst) - loglik), all in one launch. NeMo computes its TDT gradient the same way
// (alphas, betas, gradients in the forward call); this file shares no code with it.
//
// Lattice (the semantics of tdt_loss.py, which the Python self-check compares against): state (t, u) = "u labels
// emitted, the next emission happens at frame t"; alpha(0, 0) = 0. From (t, u) with duration d_k:
//   - blank (d_k >= 1 only) goes to (t + d_k, u); landing exactly on T_b with u == U_b ends the utterance;
//   - label u+1 (d_k >= 0, u < U_b) goes to (t + d_k, u + 1), only if t + d_k < T_b.
// Scores are per edge: blank_score[b, t, u, k], label_score[b, t, u, k] (label u+1 emitted at (t, u)); a score at
// or below kNeg means "no such edge" (the RNN-T branch uses that for blank d = 0 and label d = 1).
//
// Build: tools/train/build_tdt_lattice.sh (a plain shared library, no PyTorch headers, so it compiles in seconds);
// Python calls it through ctypes on PyTorch's current stream (tools/train/tdt_lattice_cuda.py).
#include <cuda_runtime.h>

#include <cmath>

namespace {

constexpr float kNeg = -1.0e30f;  // "log 0", finite as in tdt_loss.py
constexpr int kMaxDurations = 8;

struct Durations {
  int count;
  int zero_index;  // the index k with d_k == 0, or -1
  int value[kMaxDurations];
};

__device__ __forceinline__ float log_add(float a, float b) {
  const float hi = fmaxf(a, b);
  if (hi <= kNeg) return kNeg;  // both "log 0" (sums of kNeg stay kNeg instead of drifting towards -inf)
  return hi + log1pf(__expf(fminf(a, b) - hi));
}

// beta of the state an edge lands on: (n, u_to), or the end of the utterance.
__device__ __forceinline__ float landing_beta(const float* beta, int n, int u_to, int tb, int ub, int u1,
                                              bool is_blank) {
  if (n < tb) return beta[n * u1 + u_to];
  return (is_blank && n == tb && u_to == ub) ? 0.0f : kNeg;
}

// One block per utterance. alpha, beta: [B, T, U1] scratch; scores and gradients: [B, T, U1, K]; the gradients
// must arrive zeroed (entries outside the utterance's T_b x (U_b + 1) are not written).
__global__ void lattice_kernel(const float* __restrict__ blank_score, const float* __restrict__ label_score,
                               const int* __restrict__ act_lens, const int* __restrict__ label_lens, int T, int u1,
                               Durations dur, float* alpha_all, float* beta_all, float* __restrict__ loglik,
                               float* __restrict__ grad_blank, float* __restrict__ grad_label) {
  const int b = blockIdx.x;
  const int K = dur.count;
  const int tb = min(act_lens[b], T);
  const int ub = min(label_lens[b], u1 - 1);
  const size_t plane = static_cast<size_t>(T) * u1;
  float* alpha = alpha_all + b * plane;
  float* beta = beta_all + b * plane;
  const float* bs = blank_score + b * plane * K;
  const float* ls = label_score + b * plane * K;
  __shared__ float ll_shared;
  if (tb <= 0) {
    if (threadIdx.x == 0) loglik[b] = kNeg;
    return;
  }

  // alpha, frame by frame: arrivals from earlier frames in parallel over u, then the duration-0 label chain
  // along u (a first-order recurrence, walked by one thread: exact, and short next to the parallel part).
  for (int t = 0; t < tb; ++t) {
    for (int u = threadIdx.x; u <= ub; u += blockDim.x) {
      float c = (t == 0 && u == 0) ? 0.0f : kNeg;
      for (int k = 0; k < K; ++k) {
        const int d = dur.value[k];
        if (d == 0 || d > t) continue;
        const int s = t - d;
        c = log_add(c, alpha[s * u1 + u] + bs[(s * u1 + u) * K + k]);
        if (u > 0) c = log_add(c, alpha[s * u1 + u - 1] + ls[(s * u1 + u - 1) * K + k]);
      }
      alpha[t * u1 + u] = c;
    }
    __syncthreads();
    if (dur.zero_index >= 0 && threadIdx.x == 0) {
      const int z = dur.zero_index;
      for (int u = 1; u <= ub; ++u)
        alpha[t * u1 + u] = log_add(alpha[t * u1 + u], alpha[t * u1 + u - 1] + ls[(t * u1 + u - 1) * K + z]);
    }
    __syncthreads();
  }

  // beta, backwards: beta(t, u) = log-probability of finishing from (t, u).
  for (int t = tb - 1; t >= 0; --t) {
    for (int u = threadIdx.x; u <= ub; u += blockDim.x) {
      float c = kNeg;
      for (int k = 0; k < K; ++k) {
        const int d = dur.value[k];
        if (d == 0) continue;
        const int n = t + d;
        c = log_add(c, bs[(t * u1 + u) * K + k] + landing_beta(beta, n, u, tb, ub, u1, true));
        if (u < ub && n < tb) c = log_add(c, ls[(t * u1 + u) * K + k] + beta[n * u1 + u + 1]);
      }
      beta[t * u1 + u] = c;
    }
    __syncthreads();
    if (dur.zero_index >= 0 && threadIdx.x == 0) {
      const int z = dur.zero_index;
      for (int u = ub - 1; u >= 0; --u)
        beta[t * u1 + u] = log_add(beta[t * u1 + u], ls[(t * u1 + u) * K + z] + beta[t * u1 + u + 1]);
    }
    __syncthreads();
  }

  if (threadIdx.x == 0) {
    ll_shared = beta[0];
    loglik[b] = beta[0];
  }
  __syncthreads();
  const float ll = ll_shared;
  if (ll <= kNeg) return;  // no alignment: no gradient (the loss is ~1e30, as tdt_loss.py's)

  // d loglik / d score(edge) = posterior of the edge = exp(alpha(src) + score + beta(dst) - loglik).
  float* gb = grad_blank + b * plane * K;
  float* gl = grad_label + b * plane * K;
  const int states = tb * (ub + 1);
  for (int i = threadIdx.x; i < states; i += blockDim.x) {
    const int t = i / (ub + 1), u = i % (ub + 1);
    const float a = alpha[t * u1 + u];
    for (int k = 0; k < K; ++k) {
      const int d = dur.value[k];
      const int at = (t * u1 + u) * K + k;
      if (d > 0) gb[at] = __expf(a + bs[at] + landing_beta(beta, t + d, u, tb, ub, u1, true) - ll);
      if (u < ub && t + d < tb) gl[at] = __expf(a + ls[at] + beta[(t + d) * u1 + u + 1] - ll);
    }
  }
}

}  // namespace

extern "C" {

// Returns 0, or a CUDA error code (steno_tdt_lattice_error names it), or -1 for arguments out of range.
// All pointers are device pointers except durations (host, `count` ints: at most one 0, at least one >= 1).
int steno_tdt_lattice(const float* blank_score, const float* label_score, const int* act_lens,
                      const int* label_lens, int B, int T, int U1, int K, const int* durations, float* alpha,
                      float* beta, float* loglik, float* grad_blank, float* grad_label, void* stream) {
  if (B < 0 || T <= 0 || U1 <= 0 || K <= 0 || K > kMaxDurations) return -1;
  Durations dur{};
  dur.count = K;
  dur.zero_index = -1;
  bool any_positive = false;
  for (int k = 0; k < K; ++k) {
    if (durations[k] < 0) return -1;
    if (durations[k] == 0) {
      if (dur.zero_index >= 0) return -1;
      dur.zero_index = k;
    }
    any_positive = any_positive || durations[k] > 0;
    dur.value[k] = durations[k];
  }
  if (!any_positive) return -1;
  if (B == 0) return 0;
  lattice_kernel<<<B, 128, 0, static_cast<cudaStream_t>(stream)>>>(blank_score, label_score, act_lens, label_lens,
                                                                   T, U1, dur, alpha, beta, loglik, grad_blank,
                                                                   grad_label);
  return static_cast<int>(cudaGetLastError());
}

const char* steno_tdt_lattice_error(int code) {
  if (code == -1) return "arguments out of range (K in 1..8, durations >= 0 with at most one 0 and one >= 1)";
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

}  // extern "C"
