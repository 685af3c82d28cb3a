// steno's one error type. Library code throws steno::Error; the edges (CLI, server handlers) catch it and turn
// its code into an exit status or an HTTP/gRPC status. Bad user input is never an abort.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace steno {

enum class ErrorCode {
  kInvalidArgument,  // the caller passed something malformed (shape, option, config value)
  kNotFound,         // a file, model directory, tensor or option does not exist
  kDataLoss,         // input bytes are corrupt or lie about themselves (truncated audio, bad safetensors header)
  kOutOfRange,       // input is well-formed but exceeds a configured limit (audio duration, body size)
  kUnimplemented,    // a feature steno does not have (yet); the message says which
  kUnavailable,      // a resource exists but cannot be used now (e.g. no CUDA device)
  kResourceExhausted,  // out of (device) memory for this work: a smaller batch may succeed
  kInternal,         // a bug: an invariant steno itself should have kept
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

template <typename... Args>
[[noreturn]] void fail(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace steno

// Argument checks at API boundaries: a false condition throws kInvalidArgument with the formatted message.
#define STENO_CHECK(cond, ...)                                                  \
  do {                                                                          \
    if (!(cond)) ::steno::fail(::steno::ErrorCode::kInvalidArgument, __VA_ARGS__); \
  } while (0)

// Internal invariants: a false condition is a steno bug, reported with its location.
#define STENO_ASSERT(cond)                                                                        \
  do {                                                                                            \
    if (!(cond))                                                                                  \
      ::steno::fail(::steno::ErrorCode::kInternal, "internal error: {} ({}:{})", #cond, __FILE__, \
                    __LINE__);                                                                    \
  } while (0)
