// Incremental mono resampling with soxr (HQ), so a long input is converted chunk by chunk and only the output
// (at the target rate) is ever held whole.
#pragma once

#include <span>
#include <vector>

struct soxr;

namespace steno::audio {

class StreamResampler {
 public:
  StreamResampler(int rate_in, int rate_out);  // rates > 0, else kInvalidArgument
  ~StreamResampler();
  StreamResampler(const StreamResampler&) = delete;
  StreamResampler& operator=(const StreamResampler&) = delete;

  // Appends to `out` the samples produced by `in`.
  void process(std::span<const float> in, std::vector<float>& out);
  // Appends the remaining samples at the end of the input; call once, last.
  void flush(std::vector<float>& out);

 private:
  void run(const float* in, size_t n, std::vector<float>& out);
  soxr* soxr_ = nullptr;
  std::vector<float> scratch_;  // soxr's output before it is appended: `out` never over-grows
  double ratio_ = 1.0;
};

}  // namespace steno::audio
