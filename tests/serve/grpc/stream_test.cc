// ModelStreamInfer (Triton's streaming RPC) against `steno serve --grpc-port` as users run it: the real binary,
// core and bundled model, a real gRPC client. A long transcription with `stream: true` gets its words as its
// pieces finish, then its answer, whose text is those words joined; a short one on the same stream gets one
// response, the text `steno transcribe` gives; a failed request is an error on the stream, which goes on; a
// cancelled stream leaves the server serving.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../serve_process.h"
#include "grpc_test_util.h"
#include "steno/audio/decode.h"

namespace steno::testing {
namespace {

using Response = inference::ModelStreamInferResponse;

bool final_of(const Response& r) {
  const auto& p = r.infer_response().parameters();
  const auto f = p.find("triton_final_response");
  EXPECT_TRUE(f != p.end()) << "a response without triton_final_response";
  return f != p.end() && f->second.bool_param();
}

std::string text_of(const Response& r) {
  const auto outputs = outputs_of(r.infer_response());
  const auto t = outputs.find("text");
  return t == outputs.end() || t->second.bytes.empty() ? std::string("<no text>") : t->second.bytes[0];
}

inference::ModelInferRequest request(const std::vector<float>& pcm, const std::string& id) {
  inference::ModelInferRequest r = fp32_request(pcm, 16000, true);
  r.set_model_name("default");
  r.set_id(id);
  return r;
}

class GrpcStream : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc_port_ = free_port();
    server_ = std::make_unique<ServeProcess>("--grpc-port " + std::to_string(grpc_port_) + " --piece-seconds 10");
    ASSERT_GT(server_->port(), 0) << server_->log();
    channel_ = ::grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port_), ::grpc::InsecureChannelCredentials());
    ASSERT_TRUE(channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(30)));
    stub_ = inference::GRPCInferenceService::NewStub(channel_);
  }
  void TearDown() override { EXPECT_TRUE(server_->stop()) << "the server did not exit after SIGTERM"; }

  // Eight test-set clips end to end: ~30 s, three pieces or more.
  static std::vector<float> long_audio() {
    std::vector<float> pcm;
    for (int i = 1; i <= 8; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "test-%07d.flac", i);
      const std::vector<float> clip = audio::load_audio_file(audio_path(name)).samples;
      pcm.insert(pcm.end(), clip.begin(), clip.end());
    }
    return pcm;
  }

  // The long audio as request "long", its words streamed.
  static inference::ModelInferRequest streamed_long_request() {
    inference::ModelInferRequest r = request(long_audio(), "long");
    (*r.mutable_parameters())["stream"].set_bool_param(true);
    return r;
  }

  int grpc_port_ = 0;
  std::unique_ptr<ServeProcess> server_;
  std::shared_ptr<::grpc::Channel> channel_;
  std::unique_ptr<Stub> stub_;
};

TEST_F(GrpcStream, WordsAsTheyAreMadeThenTheAnswerAndAShortRequestBeside) {
  ::grpc::ClientContext context;
  prepare(context);
  auto stream = stub_->ModelStreamInfer(&context);
  ASSERT_TRUE(stream->Write(streamed_long_request()));
  const std::string short_clip = "test-0000009.flac";
  ASSERT_TRUE(stream->Write(request(audio::load_audio_file(audio_path(short_clip)).samples, "short")));
  stream->WritesDone();

  std::vector<std::string> stretches;
  std::string long_text, short_text;
  int short_responses = 0;
  for (Response r; stream->Read(&r);) {
    ASSERT_TRUE(r.error_message().empty()) << r.error_message();
    const std::string& id = r.infer_response().id();
    if (id == "short") {
      ++short_responses;
      EXPECT_TRUE(final_of(r));
      short_text = text_of(r);
    } else {
      ASSERT_EQ(id, "long");
      ASSERT_TRUE(long_text.empty()) << "a response after the long request's last";
      if (final_of(r))
        long_text = text_of(r);
      else
        stretches.push_back(text_of(r));
    }
  }
  const ::grpc::Status status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(short_responses, 1);
  EXPECT_EQ(short_text, reference_transcripts().at(short_clip));
  ASSERT_GE(stretches.size(), 2u) << "the long request's words came in fewer than two stretches";
  std::string joined;
  for (const std::string& s : stretches) joined += (joined.empty() || s.empty() ? "" : " ") + s;
  EXPECT_EQ(long_text, joined);
}

TEST_F(GrpcStream, AFailedRequestIsAnErrorOnTheStreamWhichGoesOn) {
  ::grpc::ClientContext context;
  prepare(context);
  auto stream = stub_->ModelStreamInfer(&context);
  const std::vector<float> pcm = audio::load_audio_file(audio_path("test-0000009.flac")).samples;
  inference::ModelInferRequest unknown = request(pcm, "unknown");
  unknown.set_model_name("no-such-model");
  inference::ModelInferRequest bad_flag = request(pcm, "bad-flag");
  (*bad_flag.mutable_parameters())["stream"].set_string_param("yes");
  inference::ModelInferRequest garbage = request({}, "garbage");
  garbage.mutable_inputs(0)->set_datatype("FP32");
  garbage.clear_raw_input_contents();
  garbage.add_raw_input_contents("abc");  // 3 bytes for FP32 [1, 0]
  for (const auto& r : {unknown, bad_flag, garbage, request(pcm, "good")}) ASSERT_TRUE(stream->Write(r));
  stream->WritesDone();
  std::map<std::string, Response> by_id;
  for (Response r; stream->Read(&r);) {
    EXPECT_TRUE(final_of(r));
    EXPECT_TRUE(by_id.emplace(r.infer_response().id(), r).second) << "two responses for " << r.infer_response().id();
  }
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(by_id.size(), 4u);
  for (const char* id : {"unknown", "bad-flag", "garbage", "good"}) ASSERT_TRUE(by_id.count(id)) << id;
  EXPECT_NE(by_id["unknown"].error_message().find("no-such-model"), std::string::npos);
  EXPECT_NE(by_id["bad-flag"].error_message().find("'stream' must be true or false"), std::string::npos);
  EXPECT_FALSE(by_id["garbage"].error_message().empty()) << by_id["garbage"].DebugString();
  EXPECT_TRUE(by_id["good"].error_message().empty()) << by_id["good"].error_message();
  EXPECT_EQ(text_of(by_id["good"]), reference_transcripts().at("test-0000009.flac"));
}

TEST_F(GrpcStream, ACancelledStreamLeavesTheServerServing) {
  {
    ::grpc::ClientContext context;
    prepare(context);
    auto stream = stub_->ModelStreamInfer(&context);
    ASSERT_TRUE(stream->Write(streamed_long_request()));
    Response first;
    ASSERT_TRUE(stream->Read(&first));  // the first stretch of words: the request is running
    context.TryCancel();
    while (stream->Read(&first)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), ::grpc::StatusCode::CANCELLED);
  }
  ::grpc::ClientContext context;
  prepare(context);
  inference::ModelInferResponse answer;
  const ::grpc::Status status =
      stub_->ModelInfer(&context, request(audio::load_audio_file(audio_path("test-0000009.flac")).samples, "after"),
                        &answer);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(outputs_of(answer)["text"].bytes.at(0), reference_transcripts().at("test-0000009.flac"));
}

}  // namespace
}  // namespace steno::testing
