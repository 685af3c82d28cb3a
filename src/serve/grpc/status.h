// How failures become gRPC statuses, and the API-key check on a call's metadata.
//   steno::Error from the request's content (status_from_error):
//     kInvalidArgument, kDataLoss, kOutOfRange, kUnimplemented -> INVALID_ARGUMENT (bad or unreadable input, audio
//     over the limit: the message says which), kNotFound -> NOT_FOUND, kInternal -> INTERNAL, others -> UNAVAILABLE
//   a rejection by the inference core (status_from_outcome):
//     kQueueFull -> RESOURCE_EXHAUSTED (+ a retry hint), kDeadlineExceeded -> DEADLINE_EXCEEDED,
//     kCancelled -> CANCELLED, kShuttingDown -> UNAVAILABLE, kUnknownModel -> NOT_FOUND, kError -> INTERNAL
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

::grpc::Status status_from_error(const Error& e);

// "INVALID_ARGUMENT", ...: for logs.
const char* status_code_name(::grpc::StatusCode code);

struct Rejection {
  ::grpc::Status status;
  long retry_after_s = 0;  // > 0: send as trailing metadata kRetryAfterKey
};
// `response.outcome` must not be kOk.
Rejection status_from_outcome(const TranscriptionResponse& response);

// nullopt when the call may proceed: no key is configured, or its `authorization` metadata is "Bearer <key>".
// Otherwise UNAUTHENTICATED, saying whether the key was missing or wrong.
std::optional<::grpc::Status> check_api_key(const ::grpc::CallbackServerContext& call, const std::string& key);

}  // namespace steno::serve::rpc
