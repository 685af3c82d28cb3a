// The message of the steno::Error a call throws, for tests of clear failures.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "steno/core/error.h"

namespace steno::testing {

// What `fn` throws as a steno::Error, after checking its code; a test failure (and "") when it throws nothing.
template <typename Fn>
std::string error_of(Fn fn, ErrorCode code) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no steno::Error thrown";
  return {};
}

}  // namespace steno::testing
