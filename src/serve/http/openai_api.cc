#include "openai_api.h"

#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>

#include "header_value.h"
#include "serve/frontend/audio_start.h"
#include "serve/frontend/diarization_formats.h"
#include "serve/http/multipart.h"
#include "transcript_formats.h"
#include "transcription_form.h"

namespace steno::serve::http {
namespace {

// The parts of a multipart/form-data body (415 for another media type, 400 for a malformed one).
std::vector<MultipartPart> form_parts(const HttpRequest& request, std::string_view route) {
  const std::string_view content_type = request.header("Content-Type");
  std::string media_type;
  try {
    media_type = parse_header_value(content_type).value;
  } catch (const Error& e) {
    throw HttpError(400, fmt::format("malformed Content-Type: {}", e.what()), "", "invalid_content_type");
  }
  if (media_type != "multipart/form-data")
    throw HttpError(415,
                    fmt::format("Content-Type is '{}'; {} takes multipart/form-data with the audio in a 'file' field",
                                content_type.empty() ? "(none)" : content_type, route),
                    "", "unsupported_media_type");
  try {
    return parse_form_data(request.body_view(), content_type);
  } catch (const Error& e) {
    throw HttpError(400, fmt::format("malformed multipart body: {}", e.what()), "", "invalid_multipart");
  }
}

// Whether the server serves a diarization model (`steno serve --diarizer DIR`): speakers need one.
bool serves_diarizer(const TranscriptionService& service) {
  for (const ModelInfo& m : service.models())
    if (m.task == "diarization") return true;
  return false;
}

void transcribe(const std::shared_ptr<ApiContext>& ctx, HttpRequest& request, Responder respond) {
  const auto received = Clock::now();
  const std::vector<MultipartPart> parts = form_parts(request, "/v1/audio/transcriptions");
  TranscriptionForm form = read_transcription_form(parts);
  if (form.speakers && !serves_diarizer(ctx->service))
    throw bad_field(form.speakers_param,
                    fmt::format("{} needs a diarization model, and this server has none: start it with --diarizer "
                                "DIR (e.g. steno serve --diarizer models/steno-sortformer-small)",
                                form.speakers_param == "response_format" ? "response_format=diarized_json"
                                                                          : form.speakers_param + "=true"));

  Submission submission;
  submission.model = form.model;
  submission.default_model_allowed = true;
  if (form.speakers) submission.diarizer = "";  // the first diarization model served, beside the named one
  submission.audio = EncodedAudio{form.file->data};  // the body outlives the call: the service decodes it now
  submission.audio_field = "file";
  submission.received = received;
  // stream=true without speakers: each stretch of words is sent as its pieces finish (a long recording's words
  // arrive while the rest is transcribed); with speakers the events wait for the whole diarization.
  const bool stream_words = form.stream && !form.speakers;
  if (stream_words)
    submission.on_words = [respond](const asr::Transcript& next) {
      std::string events = transcript_delta_events(next.words, !respond.begun());
      if (respond.begun()) return respond.more(std::move(events));
      HttpResponse head = HttpResponse::text(200, std::move(events), "text/event-stream");
      head.headers.emplace_back("Cache-Control", "no-cache");
      respond.begin(std::move(head));
    };
  RenderFailureFn render_failure = [respond](const HttpError& e) -> std::optional<HttpResponse> {
    if (!respond.begun()) return std::nullopt;
    return HttpResponse::text(200, transcript_error_event(e), "text/event-stream");
  };
  RenderFn render = [format = form.format, verbose = form.verbose, speakers = form.speakers, stream = form.stream,
                     names = std::move(form.speaker_names), respond](const TranscriptionResponse& r) {
    if (stream && respond.begun())  // the words are out: the stream ends with the whole text
      return HttpResponse::text(200, transcript_done_event(r.transcript.text), "text/event-stream");
    std::optional<SpeakerTranscript> who;
    if (speakers) who = speaker_transcript(r, names);
    RenderedBody out = stream ? render_transcript_events(r.transcript, who ? &*who : nullptr)
                              : render_transcript(r.transcript, format, r.audio_seconds, verbose, r.warnings,
                                                  who ? &*who : nullptr);
    HttpResponse response = HttpResponse::text(200, std::move(out.body), std::move(out.content_type));
    if (stream) response.headers.emplace_back("Cache-Control", "no-cache");  // as event streams are served
    return response;
  };
  submit_transcription(ctx, request, ApiStyle::kOpenAI, std::move(submission), std::move(render),
                       std::move(respond), std::move(render_failure));
}

// An RTTM recording id from an uploaded file's name: its stem, whitespace made '_'; "audio" without one.
std::string rttm_file_id(const MultipartPart& file) {
  std::string name = file.filename.value_or("");
  if (const size_t slash = name.find_last_of("/\\"); slash != std::string::npos) name = name.substr(slash + 1);
  if (const size_t dot = name.find_last_of('.'); dot != std::string::npos && dot > 0) name = name.substr(0, dot);
  for (char& c : name)
    if (std::isspace(static_cast<unsigned char>(c)) != 0) c = '_';
  return name.empty() ? "audio" : name;
}

// POST /v1/audio/diarizations: who spoke when, from a diarization model (`steno serve --diarizer DIR`). Fields:
// file (required), model (a diarization model's name or alias; default: the first served), response_format
// json (default) or rttm.
void diarize(const std::shared_ptr<ApiContext>& ctx, HttpRequest& request, Responder respond) {
  const auto received = Clock::now();
  const std::vector<MultipartPart> parts = form_parts(request, "/v1/audio/diarizations");
  const MultipartPart* file = find_part(parts, "file");
  if (!file)
    throw HttpError(400, "missing required field 'file': send the audio as a multipart file field named 'file'",
                    "file", "missing_field");
  std::string format = to_lower(form_field(parts, "response_format"));
  if (format.empty()) format = "json";
  if (format != "json" && format != "rttm")
    throw bad_field("response_format", fmt::format("response_format '{}' is not one of json, rttm", format));

  Submission submission;
  submission.model = form_field(parts, "model");
  submission.default_model_allowed = true;
  submission.task = "diarization";
  submission.audio = EncodedAudio{file->data};
  submission.audio_field = "file";
  submission.received = received;
  RenderFn render = [format, id = rttm_file_id(*file)](const TranscriptionResponse& r) {
    static const DiarizationResult none;
    const DiarizationResult& d = r.diarization ? *r.diarization : none;
    if (format == "rttm") return HttpResponse::text(200, diarization_rttm(d, id), "text/plain; charset=utf-8");
    return HttpResponse::json(200, diarization_json(d, r.audio_seconds));
  };
  submit_transcription(ctx, request, ApiStyle::kOpenAI, std::move(submission), std::move(render),
                       std::move(respond));
}

// A name clients may use, as OpenAI's model object; an alias says which served model it stands for ("root").
nlohmann::json model_object(const ApiContext& ctx, const std::string& id, const ModelInfo& model) {
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(ctx.started.time_since_epoch()).count();
  nlohmann::json o = {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "steno"}};
  if (id != model.name) o["root"] = model.name;
  return o;
}

// A large upload whose audio is surely over the limit, refused from the start of its file part.
std::optional<HttpResponse> refuse_long_upload(const ApiContext& ctx, const HttpRequest& head, std::string_view start,
                                               uint64_t content_length) {
  std::string boundary;
  try {
    boundary = multipart_boundary(head.header("Content-Type"));
  } catch (const Error&) {
    return std::nullopt;  // the handler says what is wrong with it
  }
  const std::optional<size_t> file = find_part_data(start, boundary, "file");
  if (!file || *file >= start.size()) return std::nullopt;
  const auto over = audio_start_over_limit(start.substr(*file), content_length - *file,
                                           longest_audio_taken(ctx.service.models()), "file");
  if (!over) return std::nullopt;
  return error_response(ApiStyle::kOpenAI, http_error(*over));
}

}  // namespace

void add_openai_routes(Router& router, const std::shared_ptr<ApiContext>& ctx) {
  // The audio uploads: handled off the I/O threads, refused from the start of the file part when surely too long.
  using Handle = void (*)(const std::shared_ptr<ApiContext>&, HttpRequest&, Responder);
  for (const auto& [path, handle] : {std::pair<const char*, Handle>{"/v1/audio/transcriptions", transcribe},
                                     std::pair<const char*, Handle>{"/v1/audio/diarizations", diarize}})
    router.add(
        "POST", path,
        [ctx, handle = handle](HttpRequest& request, Responder respond) { handle(ctx, request, std::move(respond)); },
        {.offload = true,
         .upload = [](const HttpRequest&) { return true; },
         .check_body_start = [ctx](const HttpRequest& head, std::string_view start, uint64_t length) {
           return refuse_long_upload(*ctx, head, start, length);
         }});
  router.add("POST", "/v1/audio/translations", [](HttpRequest&, Responder) {
    throw HttpError(501, "translation is not supported: steno transcribes English speech into English text; use "
                         "/v1/audio/transcriptions",
                    "", "unsupported_endpoint");
  });
  router.add("GET", "/v1/models", [ctx](HttpRequest&, Responder respond) {
    nlohmann::json data = nlohmann::json::array();
    // The served models; their aliases are names to send, not models of their own (retrieving one names its root).
    for (const ModelInfo& m : ctx->service.models()) data.push_back(model_object(*ctx, m.name, m));
    respond(HttpResponse::json(200, nlohmann::json{{"object", "list"}, {"data", data}}.dump()));
  });
  router.add("GET", "/v1/models/{model}", [ctx](HttpRequest& request, Responder respond) {
    const std::string& name = request.params.at("model");
    respond(HttpResponse::json(200, model_object(*ctx, name, resolve_model(ctx->service, name, false)).dump()));
  });
}

}  // namespace steno::serve::http
