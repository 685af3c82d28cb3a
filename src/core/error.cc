#include "steno/core/error.h"

namespace steno {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kDataLoss: return "corrupt input";
    case ErrorCode::kOutOfRange: return "over a limit";
    case ErrorCode::kUnimplemented: return "not supported";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kResourceExhausted: return "resource exhausted";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

}  // namespace steno
