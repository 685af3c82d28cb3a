// Libraries opened when first needed (core/run_time_library.h), on the C maths library every machine has: a missing
// library or function is a kUnavailable error naming it, and a table whose load failed is loaded again next time.
#include "core/run_time_library.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "steno/core/error.h"

namespace steno {
namespace {

struct Maths {
  double (*cos)(double) = nullptr;
};

TEST(RunTimeLibrary, BindsWhatTheLibraryHasAndNamesWhatItLacks) {
  RunTimeLibrary libm("libm.so.6", "the C maths library");
  Maths m;
  libm.bind(m.cos, "cos");
  ASSERT_NE(m.cos, nullptr);
  EXPECT_DOUBLE_EQ(m.cos(0.0), 1.0);
  libm.require_all();  // nothing missing yet
  double (*nothing)(double) = nullptr;
  libm.bind(nothing, "steno_no_such_function");
  EXPECT_EQ(nothing, nullptr);
  try {
    libm.require_all();
    FAIL() << "a missing function went unnoticed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("libm.so.6 lacks steno_no_such_function"), std::string::npos) << e.what();
  }
}

TEST(RunTimeLibrary, AMissingLibraryIsUnavailableNamingItAndItsPurpose) {
  try {
    RunTimeLibrary("libsteno-no-such-library.so.1", "a test");
    FAIL() << "a missing library opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot load libsteno-no-such-library.so.1 (a test)"), std::string::npos) << what;
  }
}

int loads = 0;
bool fail_next = true;
Maths flaky_load() {  // fails the first time, as a library installed after the first attempt would
  ++loads;
  if (std::exchange(fail_next, false)) fail(ErrorCode::kUnavailable, "not yet");
  RunTimeLibrary libm("libm.so.6", "the C maths library");
  Maths m;
  libm.bind(m.cos, "cos");
  libm.require_all();
  return m;
}

TEST(RunTimeLibrary, ATableIsLoadedOnceAndAFailedLoadIsTriedAgain) {
  EXPECT_THROW((load_once<Maths, flaky_load>()), Error);
  const Maths& first = load_once<Maths, flaky_load>();
  const Maths& second = load_once<Maths, flaky_load>();
  EXPECT_EQ(&first, &second);
  EXPECT_EQ(loads, 2);
  EXPECT_DOUBLE_EQ(first.cos(0.0), 1.0);
}

}  // namespace
}  // namespace steno
