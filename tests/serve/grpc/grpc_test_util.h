// The gRPC front end under test: the real GrpcServer on 127.0.0.1 (ephemeral port), in-process, over any
// TranscriptionService (the HTTP tests' FakeService, or a real InferenceCore), driven by a real gRPC client: the
// stub generated from the same proto/grpc_service.proto as the server. Plus request builders and a reader of the
// response's raw outputs.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fake_service.h"
#include "grpc_service.grpc.pb.h"
#include "serve/grpc/server.h"

namespace steno::testing {

using Stub = inference::GRPCInferenceService::Stub;

std::string audio_path(const std::string& clip);  // tests/data/testset/espeak/audio/<clip>
std::string file_bytes(const std::string& path);
// reference_transcripts.tsv: the bundled model's greedy transcript of each clip ("test-0000001.flac" -> text), what
// an in-process core's transcriber gives.
const std::map<std::string, std::string>& reference_transcripts();
// reference_beam_lm_transcripts.tsv: its transcript as it decodes by default (beam search with its LM), what
// `steno transcribe` and `steno serve` give.
const std::map<std::string, std::string>& default_transcripts();

class GrpcTestServer {
 public:
  explicit GrpcTestServer(serve::TranscriptionService& service, serve::rpc::GrpcServerOptions options = {});
  ~GrpcTestServer();

  uint16_t port() const { return server_->port(); }
  serve::rpc::GrpcServer& server() { return *server_; }
  std::unique_ptr<Stub> stub() const;

 private:
  std::unique_ptr<serve::rpc::GrpcServer> server_;
};

// A FakeService and a GrpcTestServer over it.
struct FakeGrpcServer {
  explicit FakeGrpcServer(FakeService::Mode mode = FakeService::Mode::kCanned,
                          serve::rpc::GrpcServerOptions options = {})
      : service(mode), server(service, std::move(options)) {}
  FakeService service;
  GrpcTestServer server;
};

// A client context with a deadline (so a server bug fails the test instead of hanging it) and, when given, the
// API key as `authorization: Bearer <key>`.
void prepare(::grpc::ClientContext& context, std::chrono::milliseconds timeout = std::chrono::seconds(60),
             const std::string& api_key = {});

// ModelInfer requests for FakeService::kModel with the one input `audio`:
//   an encoded file as BYTES [1], in contents.bytes_contents or in raw_input_contents (4-byte length + bytes);
inference::ModelInferRequest bytes_request(const std::string& file, bool raw = false);
//   PCM as FP32 [1, N], in contents.fp32_contents or raw, with a sample_rate parameter unless it is nullopt.
inference::ModelInferRequest fp32_request(const std::vector<float>& pcm, std::optional<int64_t> sample_rate,
                                          bool raw = false);

// One output of a response, its raw data decoded.
struct Output {
  std::string datatype;
  std::vector<int64_t> shape;
  std::vector<std::string> bytes;  // BYTES
  std::vector<float> fp32;         // FP32
};
// By name; a raw_output_contents entry that does not match its output's datatype fails the test.
std::map<std::string, Output> outputs_of(const inference::ModelInferResponse& response);

// A port nothing listens on right now (the kernel's pick for an ephemeral bind, released at once).
int free_port();

// The value of trailing metadata `key`, "" when absent.
std::string trailer(const ::grpc::ClientContext& context, const std::string& key);

}  // namespace steno::testing
