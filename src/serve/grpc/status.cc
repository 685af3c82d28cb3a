#include "status.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "steno/serve/frontend/api_key.h"

namespace steno::serve::rpc {

using ::grpc::Status;
using ::grpc::StatusCode;

Status status_from_error(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kDataLoss:
    case ErrorCode::kOutOfRange:
    case ErrorCode::kUnimplemented:  // a container or codec steno does not read: the client's input is at fault
      return Status(StatusCode::INVALID_ARGUMENT, e.what());
    case ErrorCode::kNotFound:
      return Status(StatusCode::NOT_FOUND, e.what());
    case ErrorCode::kInternal:
      return Status(StatusCode::INTERNAL, e.what());
    default:  // kUnavailable and shortages of server resources: the client may retry later
      return Status(StatusCode::UNAVAILABLE, e.what());
  }
}

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::OK: return "OK";
    case StatusCode::CANCELLED: return "CANCELLED";
    case StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case StatusCode::NOT_FOUND: return "NOT_FOUND";
    case StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case StatusCode::INTERNAL: return "INTERNAL";
    case StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "OTHER";
  }
}

Rejection status_from_outcome(const TranscriptionResponse& r) {
  auto with_default = [&](const char* fallback) { return r.message.empty() ? std::string(fallback) : r.message; };
  switch (r.outcome) {
    case Outcome::kQueueFull: {
      const long after = std::max(1L, static_cast<long>(std::ceil(r.retry_after_s)));
      return {Status(StatusCode::RESOURCE_EXHAUSTED,
                     fmt::format("{}; retry after {} s", with_default("the server is at capacity"), after)),
              after};
    }
    case Outcome::kDeadlineExceeded:
      return {Status(StatusCode::DEADLINE_EXCEEDED, with_default("the request's deadline passed before it could run"))};
    case Outcome::kCancelled:
      return {Status(StatusCode::CANCELLED, with_default("the request was cancelled"))};
    case Outcome::kShuttingDown:
      return {Status(StatusCode::UNAVAILABLE, with_default("the server is shutting down"))};
    case Outcome::kUnknownModel:
      return {Status(StatusCode::NOT_FOUND, with_default("unknown model"))};
    case Outcome::kError:
      return {Status(StatusCode::INTERNAL, with_default("internal error"))};
    case Outcome::kOk:
      break;
  }
  return {Status(StatusCode::INTERNAL, "internal error: a successful outcome was reported as an error")};
}

std::optional<Status> check_api_key(const ::grpc::CallbackServerContext& call, const std::string& key) {
  if (key.empty()) return std::nullopt;
  const auto& metadata = call.client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end())
    return Status(StatusCode::UNAUTHENTICATED, "missing API key: send metadata 'authorization: Bearer <key>'");
  if (bearer_token_matches(std::string_view(it->second.data(), it->second.size()), key)) return std::nullopt;
  return Status(StatusCode::UNAUTHENTICATED, "invalid API key in the 'authorization' metadata");
}

}  // namespace steno::serve::rpc
