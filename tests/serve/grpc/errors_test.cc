// Everything that is not a transcript: the bad-input matrix (each with its status code and a message that says
// what was wrong), the core's rejections, the message size limit, deadlines, client cancellation and shutdown.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "grpc_test_util.h"
#include "steno/core/error.h"

namespace steno::testing {
namespace {

using ::grpc::ClientContext;
using ::grpc::StatusCode;
using namespace std::chrono_literals;

::grpc::Status infer(Stub& stub, const inference::ModelInferRequest& request, ClientContext* context = nullptr) {
  ClientContext local;
  ClientContext& c = context ? *context : local;
  if (!context) prepare(c);
  inference::ModelInferResponse r;
  return stub.ModelInfer(&c, request, &r);
}

#define EXPECT_STATUS(status, code, fragment)                                                        \
  do {                                                                                               \
    const ::grpc::Status s_ = (status);                                                              \
    EXPECT_EQ(s_.error_code(), code) << s_.error_message();                                          \
    EXPECT_NE(s_.error_message().find(fragment), std::string::npos) << s_.error_message();           \
  } while (0)

TEST(GrpcBadInput, Matrix) {
  FakeGrpcServer s;
  auto stub = s.server.stub();
  const std::string flac = file_bytes(audio_path("test-0000001.flac"));

  inference::ModelInferRequest r = bytes_request(flac);
  r.set_model_name("whisper-2");
  EXPECT_STATUS(infer(*stub, r), StatusCode::NOT_FOUND,
                "model 'whisper-2' is not served here; available: 'steno-tdt-small-en' (also: whisper-1, default)");
  r = bytes_request(flac);
  r.set_model_version("7");
  EXPECT_STATUS(infer(*stub, r), StatusCode::NOT_FOUND, "no version '7'");

  r = bytes_request(flac);
  r.mutable_inputs(0)->set_datatype("INT16");
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "datatype INT16");
  r = bytes_request(flac);
  r.mutable_inputs(0)->set_name("pcm");
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "unknown input 'pcm'");
  r = bytes_request(flac);
  r.mutable_inputs(0)->mutable_contents()->add_bytes_contents(flac);  // two files, shape [1]
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "needs 1 elements but 2 were given");
  r.mutable_inputs(0)->set_shape(0, 2);  // two files, shape [2]
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "exactly one element");
  r = bytes_request(flac);
  r.mutable_inputs(0)->set_shape(0, -1);
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "non-negative");
  r = bytes_request(flac);
  r.add_inputs()->CopyFrom(r.inputs(0));
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "exactly one input");
  r = bytes_request(flac);
  r.add_outputs()->set_name("logits");
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "unknown output 'logits'");
  r = bytes_request(flac);
  r.add_outputs()->set_name("word_speakers");  // speakers need the diarize parameter (and a diarizer served)
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "'diarize'");

  // Audio that is not audio, or none.
  EXPECT_STATUS(infer(*stub, bytes_request("")), StatusCode::INVALID_ARGUMENT, "empty");
  EXPECT_STATUS(infer(*stub, bytes_request(std::string(4000, '\x5a'))), StatusCode::INVALID_ARGUMENT, "audio");
  // A FLAC cut inside its first frame (bytes 108..4917) holds nothing to transcribe (one cut later is transcribed
  // as far as it goes: GrpcCutAudio below).
  EXPECT_STATUS(infer(*stub, bytes_request(flac.substr(0, 500))), StatusCode::INVALID_ARGUMENT,
                "no audio could be decoded");
  static const char ftyp[] = "\0\0\0\x1c" "ftypisom\0\0\x02\0isomiso2mp41";  // an MP4 head alone: no audio
  EXPECT_STATUS(infer(*stub, bytes_request(std::string(ftyp, sizeof ftyp - 1) + std::string(100, '\0'))),
                StatusCode::INVALID_ARGUMENT, "");

  // PCM: the sample rate is required and checked, the shape is mono, the samples finite and present.
  EXPECT_STATUS(infer(*stub, fp32_request({0.1f, 0.2f}, std::nullopt)), StatusCode::INVALID_ARGUMENT,
                "needs a 'sample_rate' parameter");
  EXPECT_STATUS(infer(*stub, fp32_request({0.1f, 0.2f}, 5)), StatusCode::INVALID_ARGUMENT, "sample_rate 5");
  r = fp32_request({0.1f, 0.2f}, 16000);
  (*r.mutable_inputs(0)->mutable_parameters())["sample_rate"].set_bool_param(true);
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "'sample_rate' must be a number");
  EXPECT_STATUS(infer(*stub, fp32_request({}, 16000)), StatusCode::INVALID_ARGUMENT, "empty (0 samples)");
  EXPECT_STATUS(infer(*stub, fp32_request({0.1f, std::nanf("")}, 16000)), StatusCode::INVALID_ARGUMENT,
                "must be finite");
  r = fp32_request({0, 0, 0, 0}, 16000);
  r.mutable_inputs(0)->set_shape(0, 2);
  r.mutable_inputs(0)->set_shape(1, 2);
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "shape [1, N]");

  // raw_input_contents: one per input, never with contents, and whole elements.
  r = bytes_request(flac, /*raw=*/true);
  r.add_raw_input_contents("extra");
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "raw_input_contents has 2 entries");
  r = bytes_request(flac, /*raw=*/true);
  r.mutable_inputs(0)->mutable_contents()->add_bytes_contents(flac);
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "both 'contents' and raw_input_contents");
  r = bytes_request(flac, /*raw=*/false);
  r.add_raw_input_contents(flac);  // the file without its 4-byte length: the "length" is garbage
  r.mutable_inputs(0)->clear_contents();
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "binary BYTES element says");
  r = fp32_request({0.1f, 0.2f}, 16000, /*raw=*/true);
  r.set_raw_input_contents(0, "abcdefg");
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "not a multiple of 4");
  r.set_raw_input_contents(0, "");  // no data at all (fuzz/seeds/grpc_request/regress-empty-raw-fp32.bin)
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "needs 2 elements but 0 were given");

  // Parameters.
  r = bytes_request(flac);
  (*r.mutable_parameters())["priority"].set_int64_param(-3);
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "'priority'");
  r = bytes_request(flac);
  (*r.mutable_parameters())["timeout"].set_int64_param(0);
  EXPECT_STATUS(infer(*stub, r), StatusCode::INVALID_ARGUMENT, "'timeout'");

  EXPECT_TRUE(s.service.seen().empty());  // nothing reached the core
  EXPECT_TRUE(infer(*stub, bytes_request(flac)).ok());  // and the server still serves
}

TEST(GrpcCutAudio, IsTranscribedAsFarAsItGoes) {
  // What a crashed recorder leaves: the complete frames before the cut reach the core.
  FakeGrpcServer s;
  auto stub = s.server.stub();
  const std::string flac = file_bytes(audio_path("test-0000001.flac"));  // 1.75 s
  EXPECT_TRUE(infer(*stub, bytes_request(flac.substr(0, flac.size() * 2 / 3))).ok());
  const auto seen = s.service.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_GT(seen[0].samples, 8000u);   // over 0.5 s
  EXPECT_LT(seen[0].samples, 24000u);  // under 1.5 s
}

TEST(GrpcBadInput, LimitsOnMessageSizeAndAudioLength) {
  serve::rpc::GrpcServerOptions o;
  o.max_message_bytes = 1 << 20;  // 1 MiB
  FakeGrpcServer s(FakeService::Mode::kCanned, o);
  s.service.set_max_audio_seconds(1.0);  // the clip is 1.75 s
  auto stub = s.server.stub();
  EXPECT_EQ(infer(*stub, bytes_request(std::string(2 << 20, 'x'))).error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_STATUS(infer(*stub, bytes_request(file_bytes(audio_path("test-0000001.flac")))),
                StatusCode::INVALID_ARGUMENT, "over the limit of 1 s (--max-audio-seconds)");
  EXPECT_STATUS(infer(*stub, fp32_request(std::vector<float>(32000), 16000)), StatusCode::INVALID_ARGUMENT,
                "--max-audio-seconds");
  EXPECT_TRUE(infer(*stub, fp32_request(std::vector<float>(8000), 16000)).ok());
}

TEST(GrpcOutcomes, CoreRejectionsMapToStatusCodes) {
  FakeGrpcServer s;
  auto stub = s.server.stub();
  const inference::ModelInferRequest r = bytes_request(file_bytes(audio_path("test-0000001.flac")));

  s.service.force_outcome(serve::Outcome::kQueueFull, "queue is full (1024 requests)", 1.2);
  ClientContext c;
  prepare(c);
  EXPECT_STATUS(infer(*stub, r, &c), StatusCode::RESOURCE_EXHAUSTED, "queue is full (1024 requests); retry after 2 s");
  EXPECT_EQ(trailer(c, "retry-after"), "2");

  s.service.force_outcome(serve::Outcome::kDeadlineExceeded, "deadline passed after 5 ms in the queue");
  EXPECT_STATUS(infer(*stub, r), StatusCode::DEADLINE_EXCEEDED, "deadline passed");
  s.service.force_outcome(serve::Outcome::kShuttingDown, "server is shutting down");
  EXPECT_STATUS(infer(*stub, r), StatusCode::UNAVAILABLE, "shutting down");
  s.service.force_outcome(serve::Outcome::kInternal, "engine failed");
  EXPECT_STATUS(infer(*stub, r), StatusCode::INTERNAL, "engine failed");
  s.service.force_outcome(serve::Outcome::kCancelled, "");
  EXPECT_EQ(infer(*stub, r).error_code(), StatusCode::CANCELLED);
}

TEST(GrpcCancellation, AnExpiredDeadlineCancelsTheQueuedRequest) {
  FakeGrpcServer s(FakeService::Mode::kHold);
  auto stub = s.server.stub();
  ClientContext c;
  prepare(c, 300ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(infer(*stub, bytes_request(file_bytes(audio_path("test-0000001.flac"))), &c).error_code(),
            StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_EQ(s.service.seen().size(), 1u);
  EXPECT_TRUE(s.service.seen()[0].has_deadline);      // the core knew the deadline
  EXPECT_TRUE(s.service.wait_cancelled(5s));          // and the request is flagged: the batcher drops it
  s.service.release_held(serve::Outcome::kCancelled);  // the core's late answer goes nowhere, harmlessly
  s.service.set_mode(FakeService::Mode::kCanned);
  EXPECT_TRUE(infer(*stub, fp32_request(std::vector<float>(1600), 16000)).ok());
}

TEST(GrpcCancellation, AClientCancelCancelsTheQueuedRequest) {
  FakeGrpcServer s(FakeService::Mode::kHold);
  auto stub = s.server.stub();
  ClientContext c;
  prepare(c);
  auto call = std::async(std::launch::async, [&] {
    return infer(*stub, bytes_request(file_bytes(audio_path("test-0000001.flac"))), &c);
  });
  ASSERT_TRUE(s.service.wait_held(1, 10s));
  EXPECT_FALSE(s.service.wait_cancelled(100ms));
  c.TryCancel();
  EXPECT_EQ(call.get().error_code(), StatusCode::CANCELLED);
  EXPECT_TRUE(s.service.wait_cancelled(5s));
  s.service.release_held(serve::Outcome::kCancelled);
  s.service.set_mode(FakeService::Mode::kCanned);
  EXPECT_TRUE(infer(*stub, bytes_request(file_bytes(audio_path("test-0000001.flac")))).ok());
}

TEST(GrpcShutdown, AnswersCallsInFlightRefusesNewOnes) {
  serve::rpc::GrpcServerOptions o;
  o.drain_timeout = 10s;
  FakeGrpcServer s(FakeService::Mode::kHold, o);
  auto stub = s.server.stub();
  ClientContext c;
  prepare(c);
  auto call = std::async(std::launch::async, [&] {
    return infer(*stub, bytes_request(file_bytes(audio_path("test-0000001.flac"))), &c);
  });
  ASSERT_TRUE(s.service.wait_held(1, 10s));
  auto stopped = std::async(std::launch::async, [&] { s.server.server().stop(); });
  EXPECT_EQ(stopped.wait_for(300ms), std::future_status::timeout);  // waiting for the call in flight
  ClientContext late;
  prepare(late, 2s);
  inference::ServerLiveResponse live;
  EXPECT_EQ(stub->ServerLive(&late, {}, &live).error_code(), StatusCode::UNAVAILABLE);  // no new calls
  s.service.release_held();
  EXPECT_TRUE(call.get().ok());  // the call in flight got its transcript
  EXPECT_EQ(stopped.wait_for(5s), std::future_status::ready);
}

TEST(GrpcShutdown, CancelsWhatOutlastsTheDrainTimeout) {
  serve::rpc::GrpcServerOptions o;
  o.drain_timeout = 300ms;
  FakeGrpcServer s(FakeService::Mode::kHold, o);
  auto stub = s.server.stub();
  ClientContext c;
  prepare(c);
  auto call = std::async(std::launch::async, [&] {
    return infer(*stub, bytes_request(file_bytes(audio_path("test-0000001.flac"))), &c);
  });
  ASSERT_TRUE(s.service.wait_held(1, 10s));
  const auto start = std::chrono::steady_clock::now();
  s.server.server().stop();  // the core never answers: stop() must not wait for it
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_FALSE(call.get().ok());
  EXPECT_TRUE(s.service.wait_cancelled(1s));  // the core is told to drop the request
}

TEST(GrpcServerStart, RefusesAPortInUseNamingIt) {
  FakeGrpcServer first;
  serve::rpc::GrpcServerOptions o;
  o.port = first.server.port();
  serve::rpc::GrpcServer second(o, first.service);
  try {
    second.start();
    FAIL() << "a second server started on port " << o.port;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(o.port)), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace steno::testing
