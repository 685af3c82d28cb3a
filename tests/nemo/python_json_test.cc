// JSON as Python's json module writes it: the expected strings are what CPython 3.11 prints for the same values.
#include <gtest/gtest.h>

#include <cmath>

#include "nemo/python_json.h"

namespace steno::nemo {
namespace {

TEST(PythonJson, FloatsAsRepr) {
  const std::pair<double, const char*> cases[] = {
      {0.025, "0.025"}, {8000.0, "8000.0"}, {1e-05, "1e-05"}, {5.960464477539063e-08, "5.960464477539063e-08"},
      {1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {123456789012345678.0, "1.2345678901234568e+17"},
      {0.0001, "0.0001"}, {-0.0, "-0.0"}, {1.5e300, "1.5e+300"}, {2.5e-320, "2.5e-320"},
      {0.1 + 0.2, "0.30000000000000004"}, {NAN, "NaN"}, {-INFINITY, "-Infinity"}};
  for (const auto& [x, want] : cases) EXPECT_EQ(python_float_repr(x), want);
}

TEST(PythonJson, IndentedAndCompactLayouts) {
  nlohmann::ordered_json j;
  j["b"] = 1;
  j["a"] = nlohmann::ordered_json::array({-1, 2.0});
  j["e"] = nlohmann::ordered_json::array();
  j["s"] = "\xe2\x96\x81t\"\\\n\x01";
  EXPECT_EQ(python_json_indented(j),
            "{\n  \"b\": 1,\n  \"a\": [\n    -1,\n    2.0\n  ],\n  \"e\": [],\n"
            "  \"s\": \"\xe2\x96\x81t\\\"\\\\\\n\\u0001\"\n}");
  EXPECT_EQ(python_json_compact(j), "{\"b\":1,\"a\":[-1,2.0],\"e\":[],\"s\":\"\xe2\x96\x81t\\\"\\\\\\n\\u0001\"}");
}

}  // namespace
}  // namespace steno::nemo
