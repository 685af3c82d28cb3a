// The Beast-free pieces on their own: router, header values, base64, the OpenAI formats, KServe tensor parsing,
// and the rendering of errors.
#include <gtest/gtest.h>

#include <cstring>

#include "../../error_util.h"
#include "errors.h"
#include "header_value.h"
#include "kserve_tensors.h"
#include "serve/http/router.h"
#include "test_client.h"
#include "transcript_formats.h"

namespace steno::serve::http {
namespace {

TEST(Router, MatchesPatternsAndCaptures) {
  Router r;
  int hit = 0;
  r.add("GET", "/v2/models/stats", [&](HttpRequest&, Responder) { hit = 1; });
  r.add("GET", "/v2/models/{model}", [&](HttpRequest&, Responder) { hit = 2; });
  r.add("POST", "/v2/models/{model}/versions/{version}/infer", [&](HttpRequest&, Responder) { hit = 3; });
  auto m = r.match("GET", "/v2/models/stats");
  ASSERT_TRUE(m.route);
  m = r.match("GET", "/v2/models/my%20model/");
  ASSERT_TRUE(m.route);
  EXPECT_EQ(m.params.at("model"), "my model");
  m = r.match("POST", "/v2/models/a/versions/1/infer");
  ASSERT_TRUE(m.route);
  EXPECT_EQ(m.params.at("version"), "1");
  m = r.match("DELETE", "/v2/models/a");
  EXPECT_FALSE(m.route);
  EXPECT_EQ(m.allowed_methods, std::vector<std::string>{"GET"});
  EXPECT_TRUE(r.match("GET", "/v2/Models/a").allowed_methods.empty());  // case-sensitive
  EXPECT_FALSE(r.match("GET", "/v2/models/a%2Fb").route);                 // an encoded '/' is never a name
  EXPECT_FALSE(r.match("GET", "/v2/models/a%4").route);
  EXPECT_FALSE(r.match("GET", "/v2/models//").route);
  EXPECT_THROW(r.add("GET", "v2", nullptr), Error);
}

TEST(HeaderValue, ParsesParameters) {
  const HeaderValue v = parse_header_value(" Multipart/Form-Data ;boundary=\"a;b\" ; x = y;;flag");
  EXPECT_EQ(v.value, "multipart/form-data");
  EXPECT_EQ(v.params.at("boundary"), "a;b");
  EXPECT_EQ(v.params.at("x"), "y");
  EXPECT_EQ(parse_header_value("").value, "");
  EXPECT_THROW(parse_header_value("a; b=\"open"), Error);
}

TEST(Base64, RoundTripsAndRefusesGarbage) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    EXPECT_EQ(base64_decode(steno::testing::base64_encode(s)).value(), s);
  EXPECT_EQ(base64_decode("aGVsbG8").value(), "hello");  // padding optional
  EXPECT_FALSE(base64_decode("aGVs*G8="));
  EXPECT_FALSE(base64_decode("a"));
}

TEST(TranscriptFormats, SubtitlesAndJson) {
  asr::Transcript t;
  t.text = "hello world";
  t.words = {{"hello", 0.08, 0.48}, {"world", 0.64, 1.2}};
  t.segments = {{"hello world", 0.08, 3661.2345}};
  EXPECT_EQ(render_transcript(t, ResponseFormat::kSrt, 4000).body,
            "1\n00:00:00,080 --> 01:01:01,235\nhello world\n\n");
  EXPECT_EQ(render_transcript(t, ResponseFormat::kVtt, 4000).body,
            "WEBVTT\n\n00:00:00.080 --> 01:01:01.235\nhello world\n\n");
  EXPECT_EQ(render_transcript(t, ResponseFormat::kText, 4).body, "hello world\n");
  EXPECT_EQ(render_transcript(t, ResponseFormat::kJson, 4).body, R"({"text":"hello world"})");
  const auto verbose = nlohmann::json::parse(render_transcript(t, ResponseFormat::kVerboseJson, 1.5, {true, true}).body);
  EXPECT_EQ(verbose["task"], "transcribe");
  EXPECT_EQ(verbose["language"], "english");
  EXPECT_DOUBLE_EQ(verbose["duration"].get<double>(), 1.5);
  EXPECT_EQ(verbose["words"].size(), 2u);
  EXPECT_EQ(verbose["words"][1]["word"], "world");
  EXPECT_EQ(verbose["segments"][0]["id"], 0);
  const auto no_words = nlohmann::json::parse(render_transcript(t, ResponseFormat::kVerboseJson, 1.5).body);
  EXPECT_FALSE(no_words.contains("words"));
  EXPECT_TRUE(no_words.contains("segments"));
  // No segments but text: one cue over the whole audio. Nothing at all: no cues.
  t.segments.clear();
  EXPECT_EQ(render_transcript(t, ResponseFormat::kSrt, 2).body, "1\n00:00:00,000 --> 00:00:02,000\nhello world\n\n");
  EXPECT_EQ(render_transcript(asr::Transcript{}, ResponseFormat::kVtt, 2).body, "WEBVTT\n\n");
  EXPECT_FALSE(parse_response_format("xml"));
}

TEST(KServeTensors, ParsesJsonAndBinary) {
  InferRequestBody r = parse_infer_request(
      R"({"id":"7","inputs":[{"name":"audio","datatype":"FP32","shape":[1,3],"data":[[0.5,-0.5,0]],
          "parameters":{"sample_rate":8000}}],"outputs":[{"name":"text","parameters":{"binary_data":true}}]})",
      std::nullopt);
  EXPECT_EQ(r.id.value(), "7");
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].fp32, (std::vector<float>{0.5f, -0.5f, 0.0f}));
  EXPECT_TRUE(r.outputs.at(0).binary);

  const std::string header = R"({"inputs":[{"name":"audio","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":7}}]})";
  std::string body = header;
  const uint32_t len = 3;
  body.append(reinterpret_cast<const char*>(&len), 4);
  body += "abc";
  r = parse_infer_request(body, header.size());
  EXPECT_EQ(r.inputs.at(0).bytes, std::vector<std::string>{"abc"});

  // Raw binary: the body is the audio, with or without the BYTES length prefix.
  EXPECT_EQ(parse_infer_request("RIFFxxxx", 0).inputs.at(0).bytes.at(0), "RIFFxxxx");
  EXPECT_EQ(parse_infer_request(body.substr(header.size()), 0).inputs.at(0).bytes.at(0), "abc");
  EXPECT_TRUE(parse_infer_request("x", 0).binary_data_output);

  auto status_of = [](const std::string& b, std::optional<size_t> n) {
    try {
      parse_infer_request(b, n);
    } catch (const ServeError& e) {
      return e.http_status();
    }
    return 200;
  };
  EXPECT_EQ(status_of("{", std::nullopt), 400);
  EXPECT_EQ(status_of("[]", std::nullopt), 400);
  EXPECT_EQ(status_of(R"({"inputs":[]})", std::nullopt), 400);
  EXPECT_EQ(status_of(R"({"inputs":[{"name":"audio","datatype":"FP32","shape":[1,2],"data":[1]}]})", std::nullopt), 400);
  EXPECT_EQ(status_of(R"({"inputs":[{"name":"audio","datatype":"FP32","shape":[-1],"data":[1]}]})", std::nullopt), 400);
  EXPECT_EQ(status_of(R"({"inputs":[{"name":"audio","datatype":"BYTES","shape":[1],"data":["%%%"]}]})", std::nullopt), 400);
  EXPECT_EQ(status_of(R"({"inputs":[{"name":"audio","datatype":"FP32","shape":[1],"data":[[[[[[[[[[1]]]]]]]]]]}]})", std::nullopt), 400);
  EXPECT_EQ(status_of(header + "ab", header.size()), 400);   // binary_data_size past the end
  EXPECT_EQ(status_of(body + "zz", header.size()), 400);      // bytes nobody accounted for
  EXPECT_EQ(status_of("{}", 10), 400);                         // header length past the body
}

TEST(KServeTensors, EncodesBinaryOutputs) {
  std::vector<OutputTensor> outs(2);
  outs[0].name = "text";
  outs[0].datatype = "BYTES";
  outs[0].shape = {1};
  outs[0].bytes = {"hi"};
  outs[0].binary = true;
  outs[1].name = "word_timestamps";
  outs[1].datatype = "FP32";
  outs[1].shape = {1, 2};
  outs[1].fp32 = {0.5f, 1.0f};
  const HttpResponse r = encode_infer_response("m", std::string("id1"), outs);
  ASSERT_EQ(r.headers.at(0).first, "Inference-Header-Content-Length");
  const size_t n = std::stoul(r.headers.at(0).second);
  const auto header = nlohmann::json::parse(r.body.substr(0, n));
  EXPECT_EQ(header["id"], "id1");
  EXPECT_EQ(header["outputs"][0]["parameters"]["binary_data_size"], 6);
  EXPECT_EQ(header["outputs"][1]["data"], (std::vector<float>{0.5f, 1.0f}));
  EXPECT_EQ(r.body.substr(n + 4), "hi");
}

TEST(Errors, ServiceFailuresAndShapes) {
  EXPECT_EQ(http_error(ServeError(Outcome::kQueueFull, "full", "", 2.5)).status, 429);
  EXPECT_EQ(http_error(ServeError(Outcome::kDeadlineExceeded, "late")).status, 504);
  EXPECT_EQ(http_error(ServeError(Outcome::kShuttingDown, "bye")).status, 503);
  EXPECT_EQ(http_error(ServeError(Outcome::kModelNotFound, "who")).status, 404);
  EXPECT_EQ(http_error(ServeError(Outcome::kCancelled, "gone")).status, 499);
  EXPECT_EQ(http_error(ServeError(Outcome::kInternal, "bug")).status, 500);
  const HttpResponse r =
      error_response("/v1/audio/transcriptions", http_error(ServeError(Outcome::kQueueFull, "full", "", 2.5)));
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers.at(0), (std::pair<std::string, std::string>{"Retry-After", "3"}));
  const auto openai = nlohmann::json::parse(r.body);
  EXPECT_EQ(openai["error"]["message"], "full");
  EXPECT_EQ(openai["error"]["type"], "rate_limit_error");
  EXPECT_EQ(openai["error"]["code"], "queue_full");
  EXPECT_TRUE(openai["error"]["param"].is_null());
  const auto kserve = nlohmann::json::parse(error_response("/v2/models/m/infer", HttpError(400, "bad")).body);
  EXPECT_EQ(kserve, (nlohmann::json{{"error", "bad"}}));
  EXPECT_EQ(error_from_exception(Error(ErrorCode::kOutOfRange, "long")).status, 413);
  EXPECT_EQ(error_from_exception(Error(ErrorCode::kUnimplemented, "mp4")).status, 415);
  EXPECT_EQ(error_from_exception(Error(ErrorCode::kDataLoss, "cut"), "file").param, "file");
}

}  // namespace
}  // namespace steno::serve::http
