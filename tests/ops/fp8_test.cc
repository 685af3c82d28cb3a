// FP8 rows where there are none: every FP8 op on the CPU says so instead of computing something else.
#include <gtest/gtest.h>

#include <string>

#include "steno/core/allocator.h"
#include "steno/core/error.h"
#include "steno/ops/fp8.h"

namespace steno::ops {
namespace {

TEST(Fp8, TheCpuRefusesEveryFp8Op) {
  Context cpu = Context::cpu(1);
  EXPECT_FALSE(fp8_supported(cpu));
  const Tensor x = Tensor::zeros({2, 16});
  Fp8Rows rows{Tensor::zeros({2, 16}, DType::kU8), Tensor::zeros({2})};
  Tensor y = Tensor::zeros({2, 2});
  auto expect_unimplemented = [](auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnimplemented) << e.what();
      EXPECT_NE(std::string(e.what()).find("compute capability 8.9"), std::string::npos) << e.what();
    }
  };
  expect_unimplemented([&] { quantize_rows(cpu, x, rows); });
  expect_unimplemented([&] { silu_quantize_rows(cpu, x, rows); });
  expect_unimplemented([&] { linear_fp8(cpu, rows, rows, Tensor(), y); });
  expect_unimplemented([&] { quantize_weight(cpu, x, default_cpu_allocator()); });
  Tensor xm = x.clone();
  expect_unimplemented([&] { add_layer_norm_fp8(cpu, xm, Tensor(), 0.0f, x, x, 1e-5f, rows); });
}

}  // namespace
}  // namespace steno::ops
