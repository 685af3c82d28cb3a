// The bad-input matrix of the HTTP front end and the transport's defences: every case answered with the right status and a
// clear message, and after each the server still serves others (ServesOthers checks it on a fresh connection).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>

#include "steno/audio/decode.h"
#include "test_server.h"

namespace steno::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kTranscribe = "/v1/audio/transcriptions";

// The server still answers a normal request on a new connection.
void expect_serves_others(uint16_t port) {
  HttpClient other(port);
  EXPECT_EQ(other.request("GET", "/v2/health/live").status, 200) << "the server stopped serving others";
}

std::string message_of(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.contains("error")) return "<not an error body: " + body.substr(0, 200) + ">";
  return j["error"].is_string() ? j["error"].get<std::string>() : j["error"]["message"].get<std::string>();
}

#define EXPECT_ERROR(response, code, fragment)                                                     \
  do {                                                                                             \
    const auto& r_ = (response);                                                                   \
    EXPECT_EQ(r_.status, code) << r_.body;                                                         \
    EXPECT_NE(message_of(r_.body).find(fragment), std::string::npos) << message_of(r_.body);       \
  } while (0)

TEST(BadInput, OpenAIMultipartMatrix) {
  TestServer s;
  HttpClient c(s.port());
  const std::string audio = read_file(test_audio(kClip));

  Form no_file;
  no_file.fields = {{"model", FakeService::kModel}};
  EXPECT_ERROR(c.request("POST", kTranscribe, no_file.body(), {{"Content-Type", no_file.content_type()}}), 400,
               "missing required field 'file'");

  EXPECT_ERROR(c.request("POST", kTranscribe, R"({"file":"x"})", {{"Content-Type", "application/json"}}), 415,
               "multipart/form-data");
  EXPECT_ERROR(c.request("POST", kTranscribe, "x"), 415, "(none)");

  Form truncated;
  truncated.file = audio;
  const std::string cut = truncated.body().substr(0, truncated.body().size() / 2);
  EXPECT_ERROR(c.request("POST", kTranscribe, cut, {{"Content-Type", truncated.content_type()}}), 400, "truncated");

  Form corrupt;
  corrupt.file = std::string(4000, '\x5a');
  EXPECT_ERROR(c.request("POST", kTranscribe, corrupt.body(), {{"Content-Type", corrupt.content_type()}}), 400,
               "audio");
  Form cut_audio;
  cut_audio.file = audio.substr(0, 500);  // a FLAC that stops inside its first frame (bytes 108..4917)
  EXPECT_ERROR(c.request("POST", kTranscribe, cut_audio.body(), {{"Content-Type", cut_audio.content_type()}}), 400,
               "no audio could be decoded");

  Form empty;
  empty.file = "";
  EXPECT_ERROR(c.request("POST", kTranscribe, empty.body(), {{"Content-Type", empty.content_type()}}), 400, "empty");

  Form au;  // a container steno recognises but does not read
  au.file = std::string(".snd\0\0\0\x18", 8) + std::string(100, '\0');
  EXPECT_ERROR(c.request("POST", kTranscribe, au.body(), {{"Content-Type", au.content_type()}}), 415,
               "AU/SND is not supported");
  Form mp4;  // an MP4 file's first box and nothing after it: read with FFmpeg (a 400), or refused without (415)
  static const char ftyp[] = "\0\0\0\x1c" "ftypisom\0\0\x02\0isomiso2mp41";
  mp4.file = std::string(ftyp, sizeof ftyp - 1) + std::string(100, '\0');
  EXPECT_EQ(c.request("POST", kTranscribe, mp4.body(), {{"Content-Type", mp4.content_type()}}).status,
            audio::decodes_ffmpeg_formats() ? 400 : 415);

  EXPECT_TRUE(s.service.seen().empty());
  expect_serves_others(s.port());
}

TEST(BadInput, KServeMatrix) {
  TestServer s;
  HttpClient c(s.port());
  const std::string b64 = base64_encode(read_file(test_audio(kClip)));
  auto input = [&](json in) { return json{{"inputs", {in}}}.dump(); };

  EXPECT_ERROR(c.request("POST", "/v2/models/nope/infer", input({})), 404, "model 'nope' is not served here");
  EXPECT_ERROR(c.request("POST", kInfer, "{\"inputs\": [}"), 400, "malformed JSON");
  EXPECT_ERROR(c.request("POST", kInfer, input({{"name", "audio"}, {"datatype", "INT16"}, {"shape", {1, 2}},
                                                {"data", {1, 2}}})),
               400, "datatype INT16");
  EXPECT_ERROR(c.request("POST", kInfer, input({{"name", "audio"}, {"datatype", "BYTES"}, {"shape", {2}},
                                                {"data", {b64, b64}}})),
               400, "exactly one element");
  EXPECT_ERROR(c.request("POST", kInfer, input({{"name", "audio"}, {"datatype", "FP32"}, {"shape", {2, 2}},
                                                {"parameters", {{"sample_rate", 16000}}}, {"data", {0, 0, 0, 0}}})),
               400, "shape [1, N]");
  EXPECT_ERROR(c.request("POST", kInfer, input({{"name", "audio"}, {"datatype", "FP32"}, {"shape", {1, 3}},
                                                {"data", {0, 0, 0}}})),
               400, "sample_rate");
  EXPECT_ERROR(c.request("POST", kInfer, input({{"name", "audio"}, {"datatype", "FP32"}, {"shape", {1, 0}},
                                                {"parameters", {{"sample_rate", 16000}}}, {"data", json::array()}})),
               400, "empty");
  EXPECT_ERROR(c.request("POST", kInfer, input({{"name", "audio"}, {"datatype", "FP32"}, {"shape", {1, 2}},
                                                {"parameters", {{"sample_rate", 5}}}, {"data", {0, 0}}})),
               400, "sample_rate 5");
  EXPECT_ERROR(c.request("POST", kInfer, input({{"name", "pcm"}, {"datatype", "BYTES"}, {"shape", {1}},
                                                {"data", {b64}}})),
               400, "unknown input 'pcm'");
  EXPECT_ERROR(c.request("POST", kInfer, json{{"inputs", {{{"name", "audio"}, {"datatype", "BYTES"},
                                                           {"shape", {1}}, {"data", {b64}}}}},
                                              {"outputs", {{{"name", "logits"}}}}}.dump()),
               400, "unknown output 'logits'");
  EXPECT_ERROR(c.request("POST", kInfer, input({{"name", "audio"}, {"datatype", "BYTES"}, {"shape", {1}},
                                                {"data", {base64_encode("not audio at all, just text")}}})),
               400, "");
  EXPECT_ERROR(c.request("POST", kInfer, "{}", {{"Inference-Header-Content-Length", "x"}}), 400,
               "Inference-Header-Content-Length");
  EXPECT_TRUE(s.service.seen().empty());
  expect_serves_others(s.port());
}

TEST(BadInput, BodyAndAudioOverTheLimits) {
  serve::http::ServerOptions o;
  o.max_body_bytes = 1 << 20;    // 1 MiB: a body that is no upload (KServe JSON)
  o.max_upload_bytes = 1 << 20;  // 1 MiB: an upload (multipart)
  TestServer s(FakeService::Mode::kCanned, o);
  s.service.set_max_audio_seconds(1.0);  // the clip is 1.75 s

  // curl sends Expect: 100-continue for a 2 MiB body: the 413 comes before the body is sent.
  const std::string big = "/tmp/steno-http-test-big-" + std::to_string(getpid()) + ".bin";
  { std::ofstream(big, std::ios::binary) << std::string(2 << 20, 'x'); }
  CurlResult r = curl(s.port(), kTranscribe, "-F 'file=@" + big + "'");
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_NE(message_of(r.body).find("limit of 1 MiB (--max-upload-mb / max_upload_mb)"), std::string::npos) << r.body;
  std::remove(big.c_str());

  // Without Expect, a Content-Length over the limit is refused from the header alone.
  HttpClient c(s.port());
  c.send_raw("POST " + kInfer + " HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n");
  auto resp = c.read_response();
  ASSERT_TRUE(resp);
  EXPECT_ERROR(*resp, 413, "limit of 1 MiB (--max-body-mb / max_body_mb)");
  EXPECT_TRUE(c.wait_closed(3s));

  HttpClient c2(s.port());
  Form form;
  form.file = read_file(test_audio(kClip));
  EXPECT_ERROR(c2.request("POST", kTranscribe, form.body(), {{"Content-Type", form.content_type()}}), 413,
               "over the limit of 1 s (--max-audio-seconds)");
  const json pcm = {{"inputs", {{{"name", "audio"}, {"datatype", "FP32"}, {"shape", {1, 32000}},
                                 {"parameters", {{"sample_rate", 16000}}}, {"data", std::vector<float>(32000)}}}}};
  EXPECT_ERROR(c2.request("POST", kInfer, pcm.dump()), 413, "--max-audio-seconds");

  HttpClient c3(s.port());
  c3.send_raw("GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
  resp = c3.read_response();
  ASSERT_TRUE(resp);
  EXPECT_ERROR(*resp, 431, "16384 bytes");
  expect_serves_others(s.port());
}

TEST(BadInput, MalformedHttpAndUnknownRoutes) {
  TestServer s;
  HttpClient c(s.port());
  EXPECT_ERROR(c.request("GET", "/v3/nothing"), 404, "no such endpoint");
  const ClientResponse wrong_method = c.request("DELETE", "/v2/health/live");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.header("Allow"), "GET");
  EXPECT_EQ(json::parse(c.request("GET", "/v1/nothing").body)["error"]["code"], "not_found");  // OpenAI shape
  HttpClient bad(s.port());
  bad.send_raw("THIS IS NOT HTTP\r\n\r\n");
  auto r = bad.read_response();
  ASSERT_TRUE(r);
  EXPECT_ERROR(*r, 400, "malformed HTTP request");
  expect_serves_others(s.port());
}

TEST(SlowClients, OneBytePerSecondGets408WhileOthersAreServed) {
  serve::http::ServerOptions o;
  o.read_timeout = 1500ms;
  TestServer s(FakeService::Mode::kCanned, o);
  HttpClient slow(s.port());
  const std::string request = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n";
  const auto start = std::chrono::steady_clock::now();
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    for (size_t i = 0; i < request.size() && !stop; ++i) {
      if (!slow.send_raw(request.substr(i, 1))) break;
      for (int t = 0; t < 10 && !stop; ++t) std::this_thread::sleep_for(100ms);  // one byte per second
    }
  });
  expect_serves_others(s.port());  // meanwhile, others are served at once
  const auto r = slow.read_response();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  trickle.join();
  ASSERT_TRUE(r) << "no 408 came";
  EXPECT_ERROR(*r, 408, "read timeout");
  EXPECT_FALSE(r->keep_alive);
  EXPECT_GE(waited, 1.4);
  EXPECT_LT(waited, 4.0);
  EXPECT_TRUE(slow.wait_closed(3s));
}

TEST(SlowClients, IdleKeepAliveConnectionsCloseQuietly) {
  serve::http::ServerOptions o;
  o.idle_timeout = 300ms;
  TestServer s(FakeService::Mode::kCanned, o);
  HttpClient c(s.port());
  EXPECT_EQ(c.request("GET", "/v2/health/live").status, 200);
  EXPECT_TRUE(c.wait_closed(2s));
  EXPECT_FALSE(c.read_response());  // closed without a 408 on an idle connection
}

TEST(Disconnects, MidUploadAndWhileServed) {
  TestServer s(FakeService::Mode::kHold);
  {
    HttpClient c(s.port());  // goes away halfway through its body
    c.send_raw("POST " + kTranscribe + " HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
               "Content-Length: 100000\r\n\r\n--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nRIFF");
  }
  expect_serves_others(s.port());
  EXPECT_TRUE(s.service.seen().empty());

  // A client whose request is queued in the core closes its connection: the request's cancelled flag is set.
  Form form;
  form.file = read_file(test_audio(kClip));
  auto c = std::make_unique<HttpClient>(s.port());
  const std::string body = form.body();
  c->send_raw("POST " + kTranscribe + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + form.content_type() +
              "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_TRUE(s.service.wait_held(1, 5s));
  c.reset();
  EXPECT_TRUE(s.service.wait_cancelled(5s));
  s.service.release_held(serve::Outcome::kCancelled);  // the core's answer goes nowhere, harmlessly
  expect_serves_others(s.port());
}

TEST(Outcomes, CoreRejectionsMapToStatuses) {
  TestServer s;
  HttpClient c(s.port());
  Form form;
  form.file = read_file(test_audio(kClip));
  const Headers ct = {{"Content-Type", form.content_type()}};
  const json kserve = {{"inputs", {{{"name", "audio"}, {"datatype", "BYTES"}, {"shape", {1}},
                                    {"data", {base64_encode(*form.file)}}}}}};

  s.service.force_outcome(serve::Outcome::kQueueFull, "queue is full (1024 requests)", 1.2);
  ClientResponse r = c.request("POST", kTranscribe, form.body(), ct);
  EXPECT_ERROR(r, 429, "queue is full");
  EXPECT_EQ(r.header("Retry-After"), "2");
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "rate_limit_error");
  r = c.request("POST", kInfer, kserve.dump());
  EXPECT_ERROR(r, 429, "queue is full");
  EXPECT_EQ(r.header("Retry-After"), "2");

  s.service.force_outcome(serve::Outcome::kDeadlineExceeded, "deadline passed after 5 ms in the queue");
  EXPECT_ERROR(c.request("POST", kInfer, kserve.dump()), 504, "deadline");
  s.service.force_outcome(serve::Outcome::kShuttingDown, "shutting down");
  EXPECT_ERROR(c.request("POST", kTranscribe, form.body(), ct), 503, "shutting down");
  s.service.force_outcome(serve::Outcome::kInternal, "engine failed");
  EXPECT_ERROR(c.request("POST", kInfer, kserve.dump()), 500, "engine failed");
}

TEST(Auth, BearerKeyRequiredExceptForHealth) {
  serve::http::ServerOptions o;
  o.api_key = "s3cret";
  TestServer s(FakeService::Mode::kCanned, o);
  HttpClient c(s.port());
  EXPECT_EQ(c.request("GET", "/v2/health/live").status, 200);
  EXPECT_EQ(c.request("GET", "/v2/health/ready").status, 200);
  ClientResponse r = c.request("GET", "/v1/models");
  EXPECT_ERROR(r, 401, "missing API key");
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "invalid_api_key");
  HttpClient c2(s.port());
  EXPECT_ERROR(c2.request("GET", "/v2", "", {{"Authorization", "Bearer wrong"}}), 401, "invalid API key");
  HttpClient c3(s.port());
  EXPECT_EQ(c3.request("GET", "/v2", "", {{"Authorization", "Bearer s3cret"}}).status, 200);
  EXPECT_EQ(curl(s.port(), kTranscribe, "-H 'Authorization: Bearer s3cret' -F 'file=@" + test_audio(kClip) + "'").status,
            200);
  // A refused upload is not read: the 401 comes from the headers alone.
  EXPECT_EQ(curl(s.port(), kTranscribe, "-F 'file=@" + test_audio(kClip) + "'").status, 401);
}

TEST(Shutdown, AnswersInFlightRequestsThenStops) {
  auto s = std::make_unique<TestServer>(FakeService::Mode::kHold);
  const uint16_t port = s->port();
  HttpClient idle(port);
  EXPECT_EQ(idle.request("GET", "/v2/health/live").status, 200);  // then idle on keep-alive

  Form form;
  form.file = read_file(test_audio(kClip));
  HttpClient busy(port);
  const std::string body = form.body();
  busy.send_raw("POST " + kTranscribe + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + form.content_type() +
                "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_TRUE(s->service.wait_held(1, 5s));

  auto stopped = std::async(std::launch::async, [&] { s->server->stop(); });
  EXPECT_TRUE(idle.wait_closed(2s));  // idle connections close at once
  EXPECT_EQ(stopped.wait_for(200ms), std::future_status::timeout);  // still waiting for the in-flight request
  s->service.release_held();
  const auto r = busy.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->keep_alive);  // Connection: close while draining
  EXPECT_EQ(stopped.wait_for(5s), std::future_status::ready);
  HttpClient after(port);
  EXPECT_FALSE(after.connected() && after.request("GET", "/v2/health/live").status == 200);
}

}  // namespace
}  // namespace steno::testing
