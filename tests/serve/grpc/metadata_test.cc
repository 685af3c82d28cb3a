// The health, metadata and statistics RPCs, and the API-key rule, through a real gRPC client.
#include <gtest/gtest.h>

#include "core_server.h"
#include "grpc_test_util.h"
#include "test_client.h"

namespace steno::testing {
namespace {

using ::grpc::ClientContext;
using ::grpc::StatusCode;

TEST(GrpcHealth, LiveAndReadyFollowTheService) {
  FakeGrpcServer s;
  auto stub = s.server.stub();
  {
    ClientContext c;
    prepare(c);
    inference::ServerLiveResponse r;
    ASSERT_TRUE(stub->ServerLive(&c, {}, &r).ok());
    EXPECT_TRUE(r.live());
  }
  for (bool ready : {true, false, true}) {
    s.service.set_ready(ready);
    ClientContext c1, c2;
    prepare(c1);
    prepare(c2);
    inference::ServerReadyResponse server;
    ASSERT_TRUE(stub->ServerReady(&c1, {}, &server).ok());
    EXPECT_EQ(server.ready(), ready);
    inference::ModelReadyRequest req;
    req.set_name(FakeService::kModel);
    inference::ModelReadyResponse model;
    ASSERT_TRUE(stub->ModelReady(&c2, req, &model).ok());
    EXPECT_EQ(model.ready(), ready);
  }
}

TEST(GrpcHealth, ModelReadyKnowsItsModelsAndVersions) {
  FakeGrpcServer s;
  auto stub = s.server.stub();
  auto ready = [&](const std::string& name, const std::string& version) {
    ClientContext c;
    prepare(c);
    inference::ModelReadyRequest req;
    req.set_name(name);
    req.set_version(version);
    inference::ModelReadyResponse r;
    const ::grpc::Status st = stub->ModelReady(&c, req, &r);
    return std::make_pair(st, r.ready());
  };
  EXPECT_TRUE(ready(FakeService::kModel, "1").first.ok());
  EXPECT_TRUE(ready(FakeService::kModel, "1").second);
  const auto [v2, v2_ready] = ready(FakeService::kModel, "2");
  EXPECT_EQ(v2.error_code(), StatusCode::NOT_FOUND);
  EXPECT_NE(v2.error_message().find("no version '2'"), std::string::npos) << v2.error_message();
  EXPECT_TRUE(ready("whisper-1", "").first.ok());  // an alias of the served model
  const auto [unknown, unknown_ready] = ready("whisper-2", "");
  EXPECT_EQ(unknown.error_code(), StatusCode::NOT_FOUND);
  EXPECT_NE(unknown.error_message().find("model 'whisper-2' is not served here"), std::string::npos)
      << unknown.error_message();
}

TEST(GrpcMetadata, ServerAndModel) {
  serve::rpc::GrpcServerOptions o;
  o.server_version = "9.9.9";
  FakeGrpcServer s(FakeService::Mode::kCanned, o);
  auto stub = s.server.stub();

  ClientContext c1;
  prepare(c1);
  inference::ServerMetadataResponse server;
  ASSERT_TRUE(stub->ServerMetadata(&c1, {}, &server).ok());
  EXPECT_EQ(server.name(), "steno");
  EXPECT_EQ(server.version(), "9.9.9");
  EXPECT_EQ(std::vector<std::string>(server.extensions().begin(), server.extensions().end()),
            (std::vector<std::string>{"statistics", "schedule_policy"}));

  ClientContext c2;
  prepare(c2);
  inference::ModelMetadataRequest req;
  req.set_name(FakeService::kModel);
  inference::ModelMetadataResponse m;
  ASSERT_TRUE(stub->ModelMetadata(&c2, req, &m).ok());
  EXPECT_EQ(m.name(), FakeService::kModel);
  ASSERT_EQ(m.versions_size(), 1);
  EXPECT_EQ(m.versions(0), "1");
  EXPECT_EQ(m.platform(), "steno_fastconformer_tdt");
  ASSERT_EQ(m.inputs_size(), 1);
  EXPECT_EQ(m.inputs(0).name(), "audio");
  EXPECT_EQ(m.inputs(0).datatype(), "BYTES");
  EXPECT_EQ(std::vector<int64_t>(m.inputs(0).shape().begin(), m.inputs(0).shape().end()), std::vector<int64_t>{1});
  ASSERT_EQ(m.outputs_size(), 4);  // text, words, word_timestamps, and word_speakers (with diarize)
  EXPECT_EQ(m.outputs(0).name(), "text");
  EXPECT_EQ(m.outputs(1).name(), "words");
  EXPECT_EQ(m.outputs(2).name(), "word_timestamps");
  EXPECT_EQ(m.outputs(2).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(m.outputs(2).shape().begin(), m.outputs(2).shape().end()),
            (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(m.outputs(3).name(), "word_speakers");

  ClientContext c3;
  prepare(c3);
  req.set_name("nope");
  EXPECT_EQ(stub->ModelMetadata(&c3, req, &m).error_code(), StatusCode::NOT_FOUND);

  // An alias names the same model; the answer gives its served name.
  ClientContext c4;
  prepare(c4);
  req.set_name("whisper-1");
  ASSERT_TRUE(stub->ModelMetadata(&c4, req, &m).ok());
  EXPECT_EQ(m.name(), FakeService::kModel);
}

TEST(GrpcStatistics, AreTheCoresAndSoTheSameOverHttp) {
  CoreServer http;  // the real core behind HTTP, and gRPC over the same core: one count, two renderings
  GrpcTestServer grpc(*http.core);
  auto stub = grpc.stub();
  const std::string clip = file_bytes(audio_path("test-0000001.flac"));
  for (int i = 0; i < 2; ++i) {
    ClientContext c;
    prepare(c);
    inference::ModelInferResponse r;
    ASSERT_TRUE(stub->ModelInfer(&c, bytes_request(clip), &r).ok());
  }
  {
    ClientContext c;
    prepare(c);
    inference::ModelInferResponse r;
    ASSERT_EQ(stub->ModelInfer(&c, bytes_request("not audio"), &r).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  // A request over HTTP, counted by the same core.
  ASSERT_EQ(curl(http.port(), "/v1/audio/transcriptions", "-F 'file=@" + audio_path("test-0000001.flac") + "'").status,
            200);

  for (const std::string& name : {std::string(FakeService::kModel), std::string()}) {
    ClientContext c;
    prepare(c);
    inference::ModelStatisticsRequest req;
    req.set_name(name);
    inference::ModelStatisticsResponse r;
    ASSERT_TRUE(stub->ModelStatistics(&c, req, &r).ok());
    ASSERT_EQ(r.model_stats_size(), 1);
    const auto& m = r.model_stats(0);
    EXPECT_EQ(m.name(), FakeService::kModel);
    EXPECT_EQ(m.version(), "1");
    EXPECT_EQ(m.inference_count(), 3u);
    EXPECT_EQ(m.execution_count(), 3u);  // one after another: batches of 1
    EXPECT_EQ(m.inference_stats().success().count(), 3u);
    EXPECT_EQ(m.inference_stats().fail().count(), 1u);
    EXPECT_GT(m.inference_stats().queue().ns(), 0u);
    EXPECT_GT(m.inference_stats().compute_input().ns(), 0u);
    EXPECT_EQ(m.inference_stats().cache_hit().count(), 0u);
    ASSERT_EQ(m.batch_stats_size(), 1);
    EXPECT_EQ(m.batch_stats(0).batch_size(), 1u);
    EXPECT_EQ(m.batch_stats(0).compute_infer().count(), 3u);
    EXPECT_GT(m.last_inference(), 0u);
  }
  ClientContext c;
  prepare(c);
  inference::ModelStatisticsRequest req;
  req.set_name("nope");
  inference::ModelStatisticsResponse r;
  EXPECT_EQ(stub->ModelStatistics(&c, req, &r).error_code(), StatusCode::NOT_FOUND);
}

TEST(GrpcAuth, BearerKeyRequiredExceptForHealth) {
  serve::rpc::GrpcServerOptions o;
  o.api_key = "s3cret";
  FakeGrpcServer s(FakeService::Mode::kCanned, o);
  auto stub = s.server.stub();
  {
    ClientContext c;
    prepare(c);
    inference::ServerLiveResponse r;
    EXPECT_TRUE(stub->ServerLive(&c, {}, &r).ok());
  }
  {
    ClientContext c;
    prepare(c);
    inference::ServerReadyResponse r;
    EXPECT_TRUE(stub->ServerReady(&c, {}, &r).ok());
  }
  const std::string clip = file_bytes(audio_path("test-0000001.flac"));
  auto infer = [&](const std::string& key) {
    ClientContext c;
    prepare(c, std::chrono::seconds(60), key);
    inference::ModelInferResponse r;
    return stub->ModelInfer(&c, bytes_request(clip), &r);
  };
  ::grpc::Status st = infer("");
  EXPECT_EQ(st.error_code(), StatusCode::UNAUTHENTICATED);
  EXPECT_NE(st.error_message().find("missing API key"), std::string::npos) << st.error_message();
  st = infer("wrong");
  EXPECT_EQ(st.error_code(), StatusCode::UNAUTHENTICATED);
  EXPECT_NE(st.error_message().find("invalid API key"), std::string::npos) << st.error_message();
  EXPECT_TRUE(infer("s3cret").ok());
  EXPECT_EQ(s.service.seen().size(), 1u);  // the refused calls never reached the core

  // Every other RPC is behind the key too.
  {
    ClientContext c;
    prepare(c);
    inference::ServerMetadataResponse r;
    EXPECT_EQ(stub->ServerMetadata(&c, {}, &r).error_code(), StatusCode::UNAUTHENTICATED);
  }
  {
    ClientContext c;
    prepare(c);
    inference::ModelMetadataRequest req;
    req.set_name(FakeService::kModel);
    inference::ModelMetadataResponse r;
    EXPECT_EQ(stub->ModelMetadata(&c, req, &r).error_code(), StatusCode::UNAUTHENTICATED);
  }
  {
    ClientContext c;
    prepare(c);
    inference::ModelReadyRequest req;
    req.set_name(FakeService::kModel);
    inference::ModelReadyResponse r;
    EXPECT_EQ(stub->ModelReady(&c, req, &r).error_code(), StatusCode::UNAUTHENTICATED);
  }
  {
    ClientContext c;
    prepare(c, std::chrono::seconds(60), "s3cret");
    inference::ModelStatisticsResponse r;
    EXPECT_TRUE(stub->ModelStatistics(&c, {}, &r).ok());
    ClientContext c2;
    prepare(c2);
    EXPECT_EQ(stub->ModelStatistics(&c2, {}, &r).error_code(), StatusCode::UNAUTHENTICATED);
  }
}

}  // namespace
}  // namespace steno::testing
