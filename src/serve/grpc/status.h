// How the service's failures become gRPC statuses (the code is ServeError's: service.h), and the API-key check on
// a call's metadata.
#pragma once

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>

#include "steno/core/error.h"
#include "steno/serve/service.h"

namespace steno::serve::rpc {

// The trailing-metadata key of the retry hint of RESOURCE_EXHAUSTED: whole seconds, rounded up, as HTTP's
// Retry-After header.
inline constexpr const char* kRetryAfterKey = "retry-after";

// The status of a failure; a queue-full one says in its message when to retry.
::grpc::Status grpc_status(const ServeError& e);
// The retry hint in whole seconds for a failure's trailing metadata; 0 when there is none.
long retry_after_seconds(const ServeError& e);

// "INVALID_ARGUMENT", ...: for logs.
const char* status_code_name(::grpc::StatusCode code);

// nullopt when the call may proceed: no key is configured, or its `authorization` metadata is "Bearer <key>".
// Otherwise UNAUTHENTICATED, saying whether the key was missing or wrong.
std::optional<::grpc::Status> check_api_key(const ::grpc::CallbackServerContext& call, const std::string& key);

}  // namespace steno::serve::rpc
