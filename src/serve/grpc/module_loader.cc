// Finding and opening libsteno-grpc.so (module.h). Part of steno_server, built with or without gRPC.
#include <filesystem>
#include <string>

#include "core/run_time_library.h"
#include "serve/grpc/module.h"
#include "steno/core/error.h"

namespace steno::serve::rpc {
namespace {

#ifdef STENO_GRPC_MODULE_BUILT
constexpr char kModuleFile[] = "libsteno-grpc.so";

// Beside the running program (an installed steno, or build/apps/steno/steno), else where this build put it
// (STENO_GRPC_MODULE_BUILT: a program of the build tree that embeds a server).
std::filesystem::path module_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path beside = exe.parent_path() / kModuleFile;
  if (!ec && std::filesystem::exists(beside, ec)) return beside;
  if (std::filesystem::exists(STENO_GRPC_MODULE_BUILT, ec)) return STENO_GRPC_MODULE_BUILT;
  return beside;  // absent: the loader's message names it
}
#endif

GrpcModuleEntry load_entry() {
#ifndef STENO_GRPC_MODULE_BUILT
  fail(ErrorCode::kUnimplemented,
       "this steno was built without gRPC (CMake STENO_WITH_GRPC=OFF, or gRPC was not found when it was "
       "configured); rebuild with Debian's libgrpc++-dev, protobuf-compiler-grpc and protobuf-compiler installed, "
       "or leave --grpc-port at 0");
#else
  // Its own libraries first: its protobuf, not libsentencepiece's older copy that the program maps (CMakeLists.txt).
  RunTimeLibrary lib(module_path().string(), "steno's gRPC front end", RunTimeLibrary::Lookup::kOwnFirst);
  GrpcModuleEntry entry = nullptr;
  lib.bind(entry, kGrpcModuleEntry);
  lib.require_all();
  return entry;
#endif
}

}  // namespace

void require_grpc_module() { load_once<GrpcModuleEntry, load_entry>(); }

std::unique_ptr<GrpcFrontEnd> open_grpc_front_end(const GrpcServerOptions& options, TranscriptionService& service) {
  return std::unique_ptr<GrpcFrontEnd>(load_once<GrpcModuleEntry, load_entry>()(options, service));
}

}  // namespace steno::serve::rpc
