#include "status.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "serve/frontend/api_key.h"

namespace steno::serve::rpc {

using ::grpc::Status;
using ::grpc::StatusCode;

long retry_after_seconds(const ServeError& e) {
  if (e.outcome() != Outcome::kQueueFull) return 0;
  return std::max(1L, static_cast<long>(std::ceil(e.retry_after_s())));
}

Status grpc_status(const ServeError& e) {
  const auto code = static_cast<StatusCode>(e.grpc_code());
  if (const long after = retry_after_seconds(e); after > 0)
    return Status(code, fmt::format("{}; retry after {} s", e.what(), after));
  return Status(code, e.what());
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
