#include "steno/serve/service.h"

#include <fmt/format.h>
#include <fmt/ranges.h>


namespace steno::serve {
namespace {

// grpc::StatusCode's numbers (grpc/impl/codegen/status_code_enum.h): part of gRPC's wire protocol, so fixed.
enum GrpcCode : int {
  kGrpcCancelled = 1,
  kGrpcInvalidArgument = 3,
  kGrpcDeadlineExceeded = 4,
  kGrpcNotFound = 5,
  kGrpcResourceExhausted = 8,
  kGrpcInternal = 13,
  kGrpcUnavailable = 14,
};

}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kInvalidInput: return "invalid_input";
    case Outcome::kOverLimit: return "over_limit";
    case Outcome::kUnsupportedFormat: return "unsupported_format";
    case Outcome::kModelNotFound: return "model_not_found";
    case Outcome::kQueueFull: return "queue_full";
    case Outcome::kDeadlineExceeded: return "deadline_exceeded";
    case Outcome::kCancelled: return "cancelled";
    case Outcome::kShuttingDown: return "shutting_down";
    case Outcome::kUnavailable: return "unavailable";
    case Outcome::kInternal: return "internal_error";
  }
  return "unknown";
}

ServeError::ServeError(Outcome outcome, const std::string& message, std::string param, double retry_after_s)
    : std::runtime_error(message), outcome_(outcome), param_(std::move(param)), retry_after_s_(retry_after_s) {}

int ServeError::http_status() const {
  switch (outcome_) {
    case Outcome::kOk: return 200;
    case Outcome::kInvalidInput: return 400;
    case Outcome::kOverLimit: return 413;
    case Outcome::kUnsupportedFormat: return 415;
    case Outcome::kModelNotFound: return 404;
    case Outcome::kQueueFull: return 429;
    case Outcome::kDeadlineExceeded: return 504;
    case Outcome::kCancelled: return 499;
    case Outcome::kShuttingDown:
    case Outcome::kUnavailable: return 503;
    case Outcome::kInternal: return 500;
  }
  return 500;
}

int ServeError::grpc_code() const {
  switch (outcome_) {
    case Outcome::kOk: return 0;
    case Outcome::kInvalidInput:
    case Outcome::kOverLimit:
    case Outcome::kUnsupportedFormat: return kGrpcInvalidArgument;  // the client's input is at fault in each
    case Outcome::kModelNotFound: return kGrpcNotFound;
    case Outcome::kQueueFull: return kGrpcResourceExhausted;
    case Outcome::kDeadlineExceeded: return kGrpcDeadlineExceeded;
    case Outcome::kCancelled: return kGrpcCancelled;
    case Outcome::kShuttingDown:
    case Outcome::kUnavailable: return kGrpcUnavailable;
    case Outcome::kInternal: return kGrpcInternal;
  }
  return kGrpcInternal;
}

ServeError serve_error(const Error& e, std::string param) {
  switch (e.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kDataLoss: return ServeError(Outcome::kInvalidInput, e.what(), std::move(param));
    case ErrorCode::kOutOfRange: return ServeError(Outcome::kOverLimit, e.what(), std::move(param));
    case ErrorCode::kUnimplemented: return ServeError(Outcome::kUnsupportedFormat, e.what(), std::move(param));
    case ErrorCode::kNotFound: return ServeError(Outcome::kModelNotFound, e.what(), std::move(param));
    case ErrorCode::kUnavailable:
    case ErrorCode::kResourceExhausted: return ServeError(Outcome::kUnavailable, e.what(), std::move(param));
    case ErrorCode::kInternal: break;
  }
  return ServeError(Outcome::kInternal, e.what(), std::move(param));
}

const char* failure_reason(Outcome o) {
  switch (o) {
    case Outcome::kQueueFull:
    case Outcome::kDeadlineExceeded:  // Triton counts scheduler timeouts as REJECTED
    case Outcome::kShuttingDown: return "REJECTED";
    case Outcome::kCancelled: return "CANCELED";
    case Outcome::kInternal: return "BACKEND";
    default: return "OTHER";
  }
}

std::optional<size_t> find_model_index(std::span<const ModelInfo> models, std::string_view name,
                                       bool default_allowed, std::string_view task) {
  if (models.empty()) return std::nullopt;
  if (name.empty()) {
    if (!default_allowed) return std::nullopt;
    for (size_t i = 0; i < models.size(); ++i)
      if (task.empty() || models[i].task == task) return i;
    return std::nullopt;
  }
  for (size_t i = 0; i < models.size(); ++i)
    if (models[i].name == name) return i;
  for (size_t i = 0; i < models.size(); ++i)
    for (const std::string& alias : models[i].aliases)
      if (alias == name) return i;
  return std::nullopt;
}

ModelInfo resolve_model(const TranscriptionService& service, std::string_view name, bool default_allowed) {
  const std::vector<ModelInfo> models = service.models();
  if (models.empty()) throw ServeError(Outcome::kUnavailable, "no model is loaded", "model");
  if (const auto i = find_model_index(models, name, default_allowed)) return models[*i];
  throw unknown_model(models, name);
}

ServeError unknown_model(std::span<const ModelInfo> models, std::string_view name) {
  std::string served;
  for (const ModelInfo& m : models) {
    served += fmt::format("{}'{}'", served.empty() ? "" : ", ", m.name);
    if (!m.aliases.empty()) served += fmt::format(" (also: {})", fmt::join(m.aliases, ", "));
  }
  const std::string shown = name.size() > 128 ? std::string(name.substr(0, 128)) + "..." : std::string(name);
  return ServeError(Outcome::kModelNotFound,
                    name.empty() ? fmt::format("no model named; this server serves {}", served)
                                 : fmt::format("model '{}' is not served here; available: {}", shown, served),
                    "model");
}

}  // namespace steno::serve
