// ModelInfer with the real engine behind the fake service: an encoded file as BYTES (in contents and in
// raw_input_contents) transcribed as `steno transcribe` does, FP32 PCM (typed and raw, at 16 kHz and resampled),
// the word timestamps, output selection, and the parameters that reach the core.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "grpc_test_util.h"
#include "steno/audio/decode.h"
#include "audio/resample.h"

namespace steno::testing {
namespace {

using ::grpc::ClientContext;

inference::ModelInferResponse infer_ok(Stub& stub, const inference::ModelInferRequest& request) {
  ClientContext c;
  prepare(c);
  inference::ModelInferResponse r;
  const ::grpc::Status st = stub.ModelInfer(&c, request, &r);
  EXPECT_TRUE(st.ok()) << st.error_code() << " " << st.error_message();
  return r;
}

TEST(GrpcInfer, BytesInputGivesTheReferenceTranscript) {
  FakeGrpcServer s(FakeService::Mode::kTranscribe);
  auto stub = s.server.stub();
  for (const std::string clip : {"test-0000001.flac", "test-0000003.flac", "test-0000009.flac"}) {
    SCOPED_TRACE(clip);
    const std::string file = file_bytes(audio_path(clip));
    for (bool raw : {false, true}) {
      SCOPED_TRACE(raw ? "raw_input_contents" : "contents");
      inference::ModelInferRequest req = bytes_request(file, raw);
      req.set_id("call-" + clip);
      const inference::ModelInferResponse r = infer_ok(*stub, req);
      EXPECT_EQ(r.model_name(), FakeService::kModel);
      EXPECT_EQ(r.model_version(), "1");
      EXPECT_EQ(r.id(), "call-" + clip);
      auto out = outputs_of(r);
      ASSERT_EQ(out.size(), 3u);
      EXPECT_EQ(out["text"].datatype, "BYTES");
      EXPECT_EQ(out["text"].shape, std::vector<int64_t>{1});
      EXPECT_EQ(out["text"].bytes, std::vector<std::string>{reference_transcripts().at(clip)});
    }
  }
}

TEST(GrpcInfer, WordsAndTimestampsDescribeTheTranscript) {
  FakeGrpcServer s(FakeService::Mode::kTranscribe);
  auto stub = s.server.stub();
  const std::string clip = "test-0000001.flac";  // "the rent is seven pounds a month", 1.75 s
  auto out = outputs_of(infer_ok(*stub, bytes_request(file_bytes(audio_path(clip)))));
  const Output& words = out["words"];
  const Output& ts = out["word_timestamps"];
  EXPECT_EQ(words.datatype, "BYTES");
  EXPECT_EQ(words.bytes,
            (std::vector<std::string>{"the", "rent", "is", "seven", "pounds", "a", "month"}));
  EXPECT_EQ(words.shape, std::vector<int64_t>{7});
  EXPECT_EQ(ts.datatype, "FP32");
  EXPECT_EQ(ts.shape, (std::vector<int64_t>{7, 2}));
  ASSERT_EQ(ts.fp32.size(), 14u);
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_LT(ts.fp32[2 * i], ts.fp32[2 * i + 1]) << "word " << i;  // start < end
    if (i > 0) {
      EXPECT_LE(ts.fp32[2 * i - 1], ts.fp32[2 * i]) << "word " << i;  // in order, no overlap
    }
  }
  EXPECT_GE(ts.fp32.front(), 0.0f);
  EXPECT_LE(ts.fp32.back(), 1.8f);
}

TEST(GrpcInfer, Fp32PcmTypedAndRawAtAnyRate) {
  FakeGrpcServer s(FakeService::Mode::kTranscribe);
  auto stub = s.server.stub();
  const std::string clip = "test-0000001.flac";
  const std::vector<float> pcm = audio::load_audio_file(audio_path(clip)).samples;
  const std::vector<float> pcm48 = audio::resample(pcm, 16000, 48000);
  struct Case {
    const std::vector<float>* pcm;
    int64_t rate;
    bool raw;
  };
  for (const Case& k : {Case{&pcm, 16000, false}, Case{&pcm, 16000, true}, Case{&pcm48, 48000, true}}) {
    SCOPED_TRACE(std::to_string(k.rate) + (k.raw ? " raw" : " typed"));
    inference::ModelInferRequest req = fp32_request(*k.pcm, k.rate, k.raw);
    req.add_outputs()->set_name("text");  // only what is asked for
    const inference::ModelInferResponse r = infer_ok(*stub, req);
    auto out = outputs_of(r);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out["text"].bytes, std::vector<std::string>{reference_transcripts().at(clip)});
    EXPECT_NEAR(static_cast<double>(s.service.seen().back().samples), static_cast<double>(pcm.size()), 2);
  }
  // sample_rate as a request-level parameter, as a double and as a string, is read as well.
  inference::ModelInferRequest req = fp32_request(pcm, std::nullopt);
  (*req.mutable_parameters())["sample_rate"].set_double_param(16000.0);
  EXPECT_EQ(outputs_of(infer_ok(*stub, req))["text"].bytes[0], reference_transcripts().at(clip));
  req = fp32_request(pcm, std::nullopt);
  (*req.mutable_inputs(0)->mutable_parameters())["sample_rate"].set_string_param("16000");
  EXPECT_EQ(outputs_of(infer_ok(*stub, req))["text"].bytes[0], reference_transcripts().at(clip));
}

TEST(GrpcInfer, PriorityAndTimeoutReachTheCore) {
  FakeGrpcServer s;
  auto stub = s.server.stub();
  inference::ModelInferRequest req = bytes_request(file_bytes(audio_path("test-0000001.flac")));
  (*req.mutable_parameters())["priority"].set_uint64_param(1);  // tritonclient sends priority as uint64
  (*req.mutable_parameters())["timeout"].set_int64_param(5'000'000);
  infer_ok(*stub, req);
  ASSERT_EQ(s.service.seen().size(), 1u);
  EXPECT_EQ(s.service.seen()[0].priority, 1);
  EXPECT_TRUE(s.service.seen()[0].has_deadline);
  EXPECT_EQ(s.service.seen()[0].id.rfind("grpc-", 0), 0u) << s.service.seen()[0].id;

  // Without a timeout parameter, the client's gRPC deadline becomes the request's deadline; without either, none.
  infer_ok(*stub, bytes_request(file_bytes(audio_path("test-0000001.flac"))));  // prepare() sets a deadline
  EXPECT_TRUE(s.service.seen()[1].has_deadline);
  ClientContext c;  // no deadline
  inference::ModelInferResponse r;
  ASSERT_TRUE(stub->ModelInfer(&c, bytes_request(file_bytes(audio_path("test-0000001.flac"))), &r).ok());
  EXPECT_FALSE(s.service.seen()[2].has_deadline);
  EXPECT_EQ(s.service.seen()[2].priority, 0);
}

// What the service warns about (audio that ended early) comes back as trailing metadata, one entry a warning; the
// fault tag goes to the service as metadata too.
TEST(GrpcInfer, WarningsAreTrailingMetadataAndTheFaultTagReachesTheService) {
  FakeGrpcServer s;
  s.service.set_warnings({"truncated: the file ends early"});
  auto stub = s.server.stub();
  ClientContext c;
  prepare(c);
  c.AddMetadata("x-steno-fault", "hang");
  inference::ModelInferResponse r;
  ASSERT_TRUE(stub->ModelInfer(&c, bytes_request(file_bytes(audio_path("test-0000001.flac"))), &r).ok());
  EXPECT_EQ(trailer(c, "x-steno-warning"), "truncated: the file ends early");
  ASSERT_EQ(s.service.seen().size(), 1u);
  EXPECT_EQ(s.service.seen()[0].fault, "hang");
}

TEST(GrpcInfer, ManyConcurrentCallsAreEachAnswered) {
  FakeGrpcServer s(FakeService::Mode::kHold);
  auto stub = s.server.stub();
  const std::string file = file_bytes(audio_path("test-0000001.flac"));
  constexpr int kCalls = 32;
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int i = 0; i < kCalls; ++i)
    clients.emplace_back([&] {
      ClientContext c;
      prepare(c);
      inference::ModelInferResponse r;
      if (stub->ModelInfer(&c, bytes_request(file), &r).ok() && outputs_of(r)["text"].bytes.size() == 1) ++ok;
    });
  // Every call is queued in the core at the same time: none of them holds a server thread while it waits.
  EXPECT_TRUE(s.service.wait_held(kCalls, std::chrono::seconds(30)));
  s.service.release_held();
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), kCalls);
}

}  // namespace
}  // namespace steno::testing
