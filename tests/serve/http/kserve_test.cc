// KServe v2 over HTTP: health, metadata, config, statistics, and inference with the audio as an encoded file
// (BYTES) or as PCM (FP32), in JSON and through the binary tensor extension.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "steno/audio/decode.h"
#include "audio/resample.h"
#include "core_server.h"
#include "../metrics_text.h"
#include "test_server.h"

namespace steno::testing {
namespace {

using nlohmann::json;
using serve::testing::metric_value;

std::vector<float> clip_pcm() { return audio::load_audio_file(test_audio(kClip)).samples; }

// The outputs of a JSON response by name.
std::map<std::string, json> outputs_of(const std::string& body) {
  std::map<std::string, json> out;
  const json doc = json::parse(body);
  for (const auto& o : doc["outputs"]) out[o["name"].get<std::string>()] = o;
  return out;
}

// A binary-extension response split into its JSON header and the raw data of each output.
struct BinaryResponse {
  json header;
  std::map<std::string, std::string> data;
};
BinaryResponse split_binary(const ClientResponse& r) {
  BinaryResponse out;
  const size_t n = std::stoul(r.header("Inference-Header-Content-Length"));
  out.header = json::parse(r.body.substr(0, n));
  size_t offset = n;
  for (const auto& o : out.header["outputs"]) {
    if (!o.contains("parameters") || !o["parameters"].contains("binary_data_size")) continue;
    const size_t size = o["parameters"]["binary_data_size"];
    out.data[o["name"]] = r.body.substr(offset, size);
    offset += size;
  }
  EXPECT_EQ(offset, r.body.size());
  return out;
}

std::string bytes_element(const std::string& s) {
  const uint32_t len = static_cast<uint32_t>(s.size());
  return std::string(reinterpret_cast<const char*>(&len), 4) + s;
}

TEST(KServe, HealthMetadataAndConfig) {
  TestServer s;
  HttpClient c(s.port());
  EXPECT_EQ(c.request("GET", "/v2/health/live").status, 200);
  EXPECT_EQ(c.request("GET", "/v2/health/ready").status, 200);
  s.service.set_ready(false);
  EXPECT_EQ(c.request("GET", "/v2/health/ready").status, 400);
  EXPECT_EQ(c.request("GET", "/v2/models/steno-tdt-small-en/ready").status, 400);
  s.service.set_ready(true);
  EXPECT_EQ(c.request("GET", "/v2/models/steno-tdt-small-en/ready").status, 200);
  EXPECT_EQ(c.request("GET", "/v2/models/steno-tdt-small-en/versions/1/ready").status, 200);
  EXPECT_EQ(c.request("GET", "/v2/models/steno-tdt-small-en/versions/2/ready").status, 404);

  const json server = json::parse(c.request("GET", "/v2").body);
  EXPECT_EQ(server["name"], "steno");
  EXPECT_NE(std::find(server["extensions"].begin(), server["extensions"].end(), "binary_tensor_data"),
            server["extensions"].end());

  const json meta = json::parse(c.request("GET", "/v2/models/steno-tdt-small-en").body);
  EXPECT_EQ(meta["name"], FakeService::kModel);
  EXPECT_EQ(meta["inputs"][0], (json{{"name", "audio"}, {"datatype", "BYTES"}, {"shape", {1}}}));
  EXPECT_EQ(meta["outputs"].size(), 4u);  // text, words, word_timestamps, and word_speakers (with diarize)
  EXPECT_EQ(meta["outputs"][3]["name"], "word_speakers");

  const json config = json::parse(c.request("GET", "/v2/models/steno-tdt-small-en/config").body);
  EXPECT_EQ(config["input"][0]["data_type"], "TYPE_STRING");
  EXPECT_EQ(config["max_batch_size"], 0);
  EXPECT_EQ(config["instance_group"][0]["kind"], "KIND_CPU");  // the service's model, as it runs
  EXPECT_EQ(config["parameters"]["max_audio_seconds"]["string_value"], "1200");

  // An alias names the same model on KServe too; the answers give the served name.
  const ClientResponse alias = c.request("GET", "/v2/models/whisper-1");
  ASSERT_EQ(alias.status, 200) << alias.body;
  EXPECT_EQ(json::parse(alias.body)["name"], FakeService::kModel);
  EXPECT_EQ(c.request("GET", "/v2/models/default/ready").status, 200);

  const ClientResponse unknown = c.request("GET", "/v2/models/nope");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body),
            (json{{"error", "model 'nope' is not served here; available: 'steno-tdt-small-en' (also: whisper-1, "
                            "default)"}}));
  EXPECT_EQ(c.request("GET", "/metrics").body, "steno_fake_metric 1\n");  // the service's render_metrics()
}

TEST(KServe, JsonBytesInputWithTheRealEngine) {
  TestServer s(FakeService::Mode::kTranscribe);
  const json request = {{"id", "abc"},
                        {"inputs",
                         {{{"name", "audio"},
                           {"datatype", "BYTES"},
                           {"shape", {1}},
                           {"data", {base64_encode(read_file(test_audio(kClip)))}}}}}};
  HttpClient c(s.port());
  const ClientResponse r = c.request("POST", kInfer, request.dump(), {{"Content-Type", "application/json"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  EXPECT_EQ(body["id"], "abc");
  EXPECT_EQ(body["model_name"], FakeService::kModel);
  auto out = outputs_of(r.body);
  EXPECT_EQ(out["text"]["data"], (json{kClipTranscript}));
  EXPECT_EQ(out["words"]["shape"], (json{7}));
  EXPECT_EQ(out["words"]["data"][3], "seven");
  EXPECT_EQ(out["word_timestamps"]["shape"], (json{7, 2}));
  EXPECT_EQ(out["word_timestamps"]["datatype"], "FP32");
  EXPECT_EQ(out["word_timestamps"]["data"].size(), 14u);
}

TEST(KServe, Fp32PcmInJsonAndBinaryWithResampling) {
  TestServer s(FakeService::Mode::kTranscribe);
  const std::vector<float> pcm = clip_pcm();
  HttpClient c(s.port());

  json request = {{"inputs",
                   {{{"name", "audio"},
                     {"datatype", "FP32"},
                     {"shape", {1, pcm.size()}},
                     {"parameters", {{"sample_rate", 16000}}},
                     {"data", pcm}}}},
                  {"outputs", {{{"name", "text"}}}}};
  ClientResponse r = c.request("POST", kInfer, request.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  auto out = outputs_of(r.body);
  EXPECT_EQ(out.size(), 1u);  // only what was asked for
  EXPECT_EQ(out["text"]["data"], (json{kClipTranscript}));

  // The same clip at 48 kHz, as raw little-endian floats after the JSON header, every output binary.
  const std::vector<float> pcm48 = audio::resample(pcm, 16000, 48000);
  const json header = {{"inputs",
                        {{{"name", "audio"},
                          {"datatype", "FP32"},
                          {"shape", {1, pcm48.size()}},
                          {"parameters", {{"sample_rate", 48000}, {"binary_data_size", pcm48.size() * 4}}}}}},
                       {"parameters", {{"binary_data_output", true}}}};
  const std::string h = header.dump();
  std::string body = h;
  body.append(reinterpret_cast<const char*>(pcm48.data()), pcm48.size() * 4);
  r = c.request("POST", kInfer, body,
                {{"Inference-Header-Content-Length", std::to_string(h.size())},
                 {"Content-Type", "application/octet-stream"}});
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  const BinaryResponse b = split_binary(r);
  EXPECT_EQ(b.data.at("text"), bytes_element(kClipTranscript));
  const std::string& ts = b.data.at("word_timestamps");
  ASSERT_EQ(ts.size(), 7u * 2 * 4);
  float first[2];
  std::memcpy(first, ts.data(), 8);
  EXPECT_LT(first[0], first[1]);
  const auto seen = s.service.seen();
  EXPECT_NEAR(static_cast<double>(seen.back().samples), static_cast<double>(pcm.size()), 2);  // back to 16 kHz
}

TEST(KServe, BinaryBytesInputAndRawRequest) {
  TestServer s;
  const std::string audio = read_file(test_audio(kClip));
  const json header = {
      {"inputs", {{{"name", "audio"}, {"datatype", "BYTES"}, {"shape", {1}},
                   {"parameters", {{"binary_data_size", audio.size() + 4}}}}}},
      {"outputs", {{{"name", "text"}, {"parameters", {{"binary_data", true}}}}, {{"name", "words"}}}}};
  const std::string h = header.dump();
  HttpClient c(s.port());
  ClientResponse r = c.request("POST", kInfer, h + bytes_element(audio),
                               {{"Inference-Header-Content-Length", std::to_string(h.size())}});
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  BinaryResponse b = split_binary(r);
  EXPECT_EQ(b.data.at("text"), bytes_element("hello world"));
  EXPECT_EQ(b.header["outputs"][1]["data"], (json{"hello", "world"}));  // words stayed JSON

  // Raw binary request: Inference-Header-Content-Length: 0 and the file as the body (curl --data-binary).
  r = c.request("POST", kInfer, audio, {{"Inference-Header-Content-Length", "0"}});
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  b = split_binary(r);
  EXPECT_EQ(b.data.at("text"), bytes_element("hello world"));
  EXPECT_EQ(b.data.size(), 3u);
}

TEST(KServe, StatisticsAreTheCoresAndCountWhatHappened) {
  CoreServer s;  // the real core: it counts, the front end renders
  HttpClient c(s.port());
  const json ok = {{"inputs", {{{"name", "audio"}, {"datatype", "BYTES"}, {"shape", {1}},
                                {"data", {base64_encode(read_file(test_audio(kClip)))}}}}}};
  for (int i = 0; i < 2; ++i) ASSERT_EQ(c.request("POST", kInfer, ok.dump()).status, 200);
  ASSERT_EQ(c.request("POST", kInfer, R"({"inputs":[{"name":"audio","datatype":"BYTES","shape":[1],"data":["AAAA"]}]})").status, 400);
  ASSERT_EQ(c.request("POST", "/v2/models/whisper-1/infer", R"({"inputs":[]})").status, 400);  // by its alias
  // The core counts an answer's rendering time once the answer is handed to the connection, which may write it
  // before that: the second request's compute_output can trail its response by a moment (seen on a loaded host).
  json stats;
  for (int i = 0; i < 200; ++i) {
    stats = json::parse(c.request("GET", "/v2/models/steno-tdt-small-en/stats").body);
    if (stats["model_stats"][0]["inference_stats"]["compute_output"]["count"] == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const json& m = stats["model_stats"][0];
  EXPECT_EQ(m["name"], FakeService::kModel);
  EXPECT_EQ(m["inference_count"], 2);
  EXPECT_EQ(m["execution_count"], 2);  // one lane, requests one after another: batches of 1
  EXPECT_EQ(m["inference_stats"]["success"]["count"], 2);
  EXPECT_EQ(m["inference_stats"]["fail"]["count"], 2);
  EXPECT_GT(m["inference_stats"]["queue"]["ns"].get<uint64_t>(), 0u);
  EXPECT_GT(m["inference_stats"]["compute_input"]["ns"].get<uint64_t>(), 0u);
  EXPECT_EQ(m["inference_stats"]["compute_output"]["count"], 2);
  EXPECT_EQ(m["batch_stats"][0]["batch_size"], 1);
  EXPECT_EQ(m["batch_stats"][0]["compute_infer"]["count"], 2);
  EXPECT_GT(m["last_inference"].get<uint64_t>(), 0u);
  EXPECT_EQ(json::parse(c.request("GET", "/v2/models/stats").body)["model_stats"].size(), 1u);
  // The same failures in /metrics: both views come from one count.
  const std::string metrics = c.request("GET", "/metrics").body;
  EXPECT_EQ(metric_value(metrics, "nv_inference_request_failure", {{"reason", "OTHER"}}), 2.0) << metrics;
  EXPECT_EQ(metric_value(metrics, "nv_inference_request_success", {{"model", FakeService::kModel}}), 2.0);
}

TEST(KServe, PriorityAndTimeoutReachTheCore) {
  TestServer s;
  const json request = {{"parameters", {{"priority", 1}, {"timeout", 5'000'000}}},
                        {"inputs", {{{"name", "audio"}, {"datatype", "BYTES"}, {"shape", {1}},
                                     {"data", {base64_encode(read_file(test_audio(kClip)))}}}}}};
  HttpClient c(s.port());
  ASSERT_EQ(c.request("POST", kInfer, request.dump()).status, 200);
  EXPECT_EQ(s.service.seen().back().priority, 1);
  EXPECT_TRUE(s.service.seen().back().has_deadline);
}

}  // namespace
}  // namespace steno::testing
