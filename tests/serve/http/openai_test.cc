// POST /v1/audio/transcriptions and GET /v1/models over real HTTP: curl (as users run it) and the Beast client.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../sse_events.h"
#include "test_server.h"

namespace steno::testing {
namespace {

using nlohmann::json;

std::string file_arg() { return "-F 'file=@" + test_audio(kClip) + "'"; }

TEST(OpenAI, TranscribesWithTheRealEngineInEveryFormat) {
  TestServer s(FakeService::Mode::kTranscribe);
  CurlResult r = curl(s.port(), "/v1/audio/transcriptions", file_arg() + " -F model=steno-tdt-small-en");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), (json{{"text", kClipTranscript}}));

  r = curl(s.port(), "/v1/audio/transcriptions", file_arg() + " -F response_format=text");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, std::string(kClipTranscript) + "\n");

  r = curl(s.port(), "/v1/audio/transcriptions",
           file_arg() + " -F response_format=verbose_json -F 'timestamp_granularities[]=word' "
                        "-F 'timestamp_granularities[]=segment' -F language=en -F prompt=ignored -F temperature=0");
  ASSERT_EQ(r.status, 200) << r.body;
  const json v = json::parse(r.body);
  EXPECT_EQ(v["text"], kClipTranscript);
  EXPECT_EQ(v["task"], "transcribe");
  EXPECT_NEAR(v["duration"].get<double>(), 1.753, 0.01);
  ASSERT_EQ(v["words"].size(), 7u);  // "the rent is seven pounds a month"
  EXPECT_EQ(v["words"][0]["word"], "the");
  double last_end = 0;
  for (const auto& w : v["words"]) {
    EXPECT_GE(w["start"].get<double>(), last_end - 1e-9);
    EXPECT_GE(w["end"].get<double>(), w["start"].get<double>());
    last_end = w["end"].get<double>();
  }
  EXPECT_LE(last_end, 1.8);
  ASSERT_GE(v["segments"].size(), 1u);
  EXPECT_EQ(v["segments"][0]["text"], kClipTranscript);
}

// stream=true: server-sent events as OpenAI's SDK reads them: a transcript.text.delta per word whose deltas join
// into the text, then transcript.text.done with the text; nothing after it.
TEST(OpenAI, StreamedEventsCarryTheTranscript) {
  TestServer s(FakeService::Mode::kTranscribe);
  for (const char* format : {"json", "text"}) {
    SCOPED_TRACE(format);
    const CurlResult r = curl(s.port(), "/v1/audio/transcriptions",
                              file_arg() + " -F stream=true -F response_format=" + format + " -D -");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find("Content-Type: text/event-stream"), std::string::npos) << r.body;
    const std::vector<json> events = sse_events(r.body);
    ASSERT_EQ(events.size(), 8u);  // seven words and done
    std::string joined;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      EXPECT_EQ(events[i]["type"], "transcript.text.delta");
      EXPECT_FALSE(events[i].contains("segment_id"));
      joined += events[i]["delta"].get<std::string>();
    }
    EXPECT_EQ(joined, kClipTranscript);
    EXPECT_EQ(events.back(), (json{{"type", "transcript.text.done"}, {"text", kClipTranscript}}));
  }
}

TEST(OpenAI, SubtitleFormatsFromSegments) {
  TestServer s;  // canned: "hello" 0.08-0.48, "world" 0.64-1.2
  CurlResult r = curl(s.port(), "/v1/audio/transcriptions", file_arg() + " -F response_format=srt");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "1\n00:00:00,080 --> 00:00:00,480\nhello\n\n2\n00:00:00,640 --> 00:00:01,200\nworld\n\n");
  r = curl(s.port(), "/v1/audio/transcriptions", file_arg() + " -F response_format=vtt");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "WEBVTT\n\n00:00:00.080 --> 00:00:00.480\nhello\n\n00:00:00.640 --> 00:00:01.200\nworld\n\n");
  // verbose_json without granularities: segments (OpenAI's default), no words.
  r = curl(s.port(), "/v1/audio/transcriptions", file_arg() + " -F response_format=verbose_json");
  const json v = json::parse(r.body);
  EXPECT_EQ(v["segments"].size(), 2u);
  EXPECT_FALSE(v.contains("words"));
  EXPECT_EQ(v["segments"][1]["start"], 0.64);
}

TEST(OpenAI, BeastClientKeepAliveAndModelAliases) {
  TestServer s(FakeService::Mode::kCanned);
  HttpClient client(s.port());
  Form form;
  form.fields = {{"model", "whisper-1"}};
  form.file = read_file(test_audio(kClip));
  for (int i = 0; i < 3; ++i) {  // one connection, three requests
    const ClientResponse r =
        client.request("POST", "/v1/audio/transcriptions", form.body(), {{"Content-Type", form.content_type()}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.body)["text"], "hello world");
    EXPECT_TRUE(r.keep_alive);
    EXPECT_EQ(r.header("X-Request-Id").substr(0, 4), "req-");
  }
  const auto seen = s.service.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].model, FakeService::kModel);  // the alias reached the core as the served name
  EXPECT_NEAR(static_cast<double>(seen[0].samples), 1.753 * 16000, 16);
}

TEST(OpenAI, ListsModels) {
  TestServer s;
  CurlResult r = curl(s.port(), "/v1/models", "");
  ASSERT_EQ(r.status, 200);
  const json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], FakeService::kModel);
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_FALSE(j["data"][0].contains("root"));
  EXPECT_EQ(j["data"].size(), 1u);  // the served model; an alias is a name for it, not a model
  EXPECT_EQ(curl(s.port(), "/v1/models/steno-tdt-small-en", "").status, 200);
  r = curl(s.port(), "/v1/models/whisper-1", "");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["root"], FakeService::kModel);
  r = curl(s.port(), "/v1/models/whisper-2", "");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "model_not_found");
}

// Each refused field: the status, OpenAI's error shape, and the field named in "param".
TEST(OpenAI, RefusesWhatItCannotHonour) {
  TestServer s;
  struct Case {
    std::string args;
    int status;
    std::string param;
    std::string fragment;
  } cases[] = {
      {"-F model=whisper-2", 404, "model", "available: 'steno-tdt-small-en' (also: whisper-1, default)"},
      {"-F language=fr", 400, "language", "English only"},
      {"-F temperature=0.2", 400, "temperature", "greedily"},
      {"-F temperature=abc", 400, "temperature", "not a number"},
      {"-F response_format=xml", 400, "response_format", "xml"},
      {"-F 'timestamp_granularities[]=word'", 400, "timestamp_granularities[]", "requires response_format=verbose_json"},
      {"-F response_format=verbose_json -F 'timestamp_granularities[]=char'", 400, "timestamp_granularities[]",
       "char"},
      {"-F stream=true -F response_format=srt", 400, "stream", "'srt' is a whole document"},
      {"-F stream=maybe", 400, "stream", "not true or false"},
      {"-F 'include[]=logprobs'", 400, "include[]", "log-probabilities"},
      // Speakers: this server has no diarizer, and the fields that need one or cannot be honoured say so.
      {"-F response_format=diarized_json", 400, "response_format", "start it with --diarizer DIR"},
      {"-F response_format=verbose_json -F diarize=true", 400, "diarize", "start it with --diarizer DIR"},
      {"-F response_format=verbose_json -F diarization=true", 400, "diarization", "--diarizer DIR"},
      {"-F diarize=true", 400, "diarize", "response_format 'json' has no place for them"},
      {"-F response_format=verbose_json -F diarize=maybe", 400, "diarize", "not true or false"},
      {"-F response_format=diarized_json -F 'timestamp_granularities[]=segment'", 400, "timestamp_granularities[]",
       "does not apply to diarized_json"},
      {"-F 'known_speaker_names[]=agent'", 400, "known_speaker_names[]", "asks for none"},
      {"-F response_format=diarized_json -F 'known_speaker_names[]=a' -F 'known_speaker_names[]=a'", 400,
       "known_speaker_names[]", "'a' twice"},
      {"-F response_format=diarized_json -F 'known_speaker_names[]=speaker_1'", 400, "known_speaker_names[]",
       "steno's own label"},
      {"-F response_format=diarized_json -F 'known_speaker_names[]=a' -F 'known_speaker_names[]=b' "
       "-F 'known_speaker_names[]=c' -F 'known_speaker_names[]=d' -F 'known_speaker_names[]=e'",
       400, "known_speaker_names[]", "at most 4"},
      {"-F response_format=diarized_json -F 'known_speaker_names[]=a' -F 'known_speaker_references[]=data:,'", 400,
       "known_speaker_references[]", "cannot match voices"},
      {"-F chunking_strategy=manual", 400, "chunking_strategy", "neither 'auto' nor a server_vad object"},
      {"-F 'chunking_strategy[type]=client_vad'", 400, "chunking_strategy", "is not server_vad"},
      {"-F 'chunking_strategy[type]=server_vad' -F 'chunking_strategy[threshold]=2'", 400, "chunking_strategy",
       "between 0 and 1"},
      {"-F 'chunking_strategy={\"type\":\"server_vad\",\"window\":3}'", 400, "chunking_strategy",
       "no field 'window'"},
  };
  for (const Case& c : cases) {
    const CurlResult r = curl(s.port(), "/v1/audio/transcriptions", file_arg() + " " + c.args);
    EXPECT_EQ(r.status, c.status) << c.args << ": " << r.body;
    const json e = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(e.contains("error")) << r.body;
    EXPECT_EQ(e["error"]["param"], c.param) << c.args;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error") << c.args;
    EXPECT_NE(e["error"]["message"].get<std::string>().find(c.fragment), std::string::npos) << e.dump();
  }
  EXPECT_TRUE(s.service.seen().empty());  // nothing refused reached the core
  EXPECT_EQ(curl(s.port(), "/v1/audio/translations", file_arg()).status, 501);
}

// chunking_strategy as OpenAI takes it (the SDK sends an object as bracketed fields), checked and then not needed:
// steno transcribes the whole file as one block.
TEST(OpenAI, AcceptsOpenAIsChunkingStrategies) {
  TestServer s;
  for (const std::string args : {"-F chunking_strategy=auto",
                                 "-F 'chunking_strategy[type]=server_vad' -F 'chunking_strategy[threshold]=0.5' "
                                 "-F 'chunking_strategy[prefix_padding_ms]=300' "
                                 "-F 'chunking_strategy[silence_duration_ms]=500'",
                                 "-F 'chunking_strategy={\"type\": \"server_vad\", \"threshold\": 0.4}'"}) {
    const CurlResult r = curl(s.port(), "/v1/audio/transcriptions", file_arg() + " " + args);
    EXPECT_EQ(r.status, 200) << args << ": " << r.body;
  }
}

}  // namespace
}  // namespace steno::testing
