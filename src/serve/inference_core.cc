#include "serve/inference_core.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <future>

#include "steno/core/error.h"
#include "serve/answer_join.h"
#include "serve/audio_input.h"
#include "serve/completer.h"
#include "serve/diarization_gate.h"
#include "serve/piecewise.h"
#include "serve/stage_durations.h"
#include "steno/vad/speech_audio.h"

namespace steno::serve {
namespace {

// The request a submission becomes, before its audio is decoded: everything a refusal needs to be answered.
std::unique_ptr<TranscriptionRequest> request_of(Submission& s, const std::string& model, AnswerFn answer) {
  auto r = std::make_unique<TranscriptionRequest>();
  r->id = std::move(s.id);
  r->model = model;
  r->priority = s.priority;
  r->arrival = s.received;
  r->deadline = s.deadline;
  if (s.cancelled) r->cancelled = std::move(s.cancelled);
  r->done = std::move(answer);
  return r;
}

// The diarization request beside a transcription request (Submission::diarizer): the same audio, client, deadline
// and cancellation flag, its own model. The audio's warnings stay with the transcription (one copy for the client)
// and fault injection with the model the client named.
std::unique_ptr<TranscriptionRequest> diarization_of(const TranscriptionRequest& r, const std::string& model) {
  auto d = std::make_unique<TranscriptionRequest>();
  d->id = r.id;
  d->model = model;
  d->pcm = r.pcm;
  d->priority = r.priority;
  d->arrival = r.arrival;
  d->deadline = r.deadline;
  d->cancelled = r.cancelled;
  d->input_ms = r.input_ms;
  return d;
}

ServeError no_diarizer(const std::string& name) {
  return ServeError(Outcome::kInvalidInput,
                    name.empty() ? std::string("speakers need a diarization model, and this server serves none "
                                               "(start it with --diarizer DIR)")
                                 : fmt::format("'{}' is not a diarization model served here", name.substr(0, 128)),
                    "model");
}

// The request's audio becomes its speech alone (after the diarizer's copy: speakers are found on the whole
// recording), and its answer's times move back to the recording's timeline. With no speech a tenth of a second of
// silence runs instead, so the request takes the one path every request takes; its words are dropped.
void cut_to_speech(TranscriptionRequest& r, const std::vector<vad::SampleRange>& speech) {
  vad::SpeechAudio cut = vad::cut_speech(r.pcm, speech);
  r.pcm = cut.pcm.empty() ? std::vector<float>(kPcmSampleRate / 10, 0.0f) : std::move(cut.pcm);
  cut.pcm = {};
  if (r.on_words)  // each stretch of words on the recording's timeline too
    r.on_words = [cut, on_words = std::move(r.on_words)](const asr::Transcript& next) {
      asr::Transcript moved = next;
      vad::restore_timeline(moved, cut, kPcmSampleRate, 0);
      if (!moved.text.empty()) on_words(moved);
    };
  r.done = [cut = std::move(cut), done = std::move(r.done)](TranscriptionResponse response) {
    if (response.ok()) {
      vad::restore_timeline(response.transcript, cut, kPcmSampleRate, 0);  // the core knows no frame length
      response.audio_seconds = response.transcript.audio_seconds;
    }
    done(std::move(response));
  };
}

// A request run whole hands its words to on_words once, just before its answer.
void words_before_answer(TranscriptionRequest& r) {
  r.done = [on_words = std::move(r.on_words), done = std::move(r.done)](TranscriptionResponse response) {
    if (response.ok() && !response.transcript.text.empty()) on_words(response.transcript);
    done(std::move(response));
  };
  r.on_words = nullptr;
}

Completion refuse(std::unique_ptr<TranscriptionRequest> request, const ServeError& e) {
  Completion c = reject(std::move(request), e.outcome(), e.what());
  c.response.param = e.param();
  c.response.retry_after_s = e.retry_after_s();
  return c;
}

}  // namespace

ModelSpec lane_model(std::string name, int lanes, RunnerFactory runners) {
  ModelSpec spec;
  spec.info.name = std::move(name);
  spec.info.share = "lanes";
  spec.info.device = "cpu";
  spec.info.max_audio_seconds = 1200;
  spec.executors = [lanes, runners = std::move(runners)](prometheus::Registry&) {
    return lane_executors(lanes, runners);
  };
  return spec;
}

InferenceCore::InferenceCore(std::vector<ModelSpec> models, CoreConfig config)
    : config_(std::move(config)), stats_(config_.registry) {
  STENO_CHECK(!models.empty(), "the inference core needs at least one model");
  for (const ModelSpec& spec : models) {  // every check before any executor starts
    spec.batcher.validate();
    STENO_CHECK(spec.executors != nullptr, "model '{}' has no executors", spec.info.name);
    STENO_CHECK(spec.info.max_audio_seconds > 0, "model '{}': max_audio_seconds must be > 0", spec.info.name);
  }
  for (ModelSpec& spec : models) {
    auto m = std::make_unique<ServedModel>();
    m->info = std::move(spec.info);
    m->info.max_batch_size = spec.batcher.max_batch_size;
    m->info.max_queue_delay_us = spec.batcher.max_queue_delay.count();
    m->resources = std::move(spec.resources);
    std::vector<std::unique_ptr<Executor>> executors = spec.executors(*stats_.registry());
    STENO_CHECK(!executors.empty(), "model '{}' has no executors", m->info.name);
    m->info.executors = static_cast<int>(executors.size());
    ModelStatistics* stats = &stats_.add_model(m->info.name, m->info.version);
    stats->set_devices(spec.devices.empty() ? std::vector<DeviceGroup>{{Device::cpu(), m->info.device, ""}}
                                            : spec.devices);
    m->stats = stats;
    m->batcher = std::make_unique<DynamicBatcher>(
        spec.batcher, DynamicBatcher::Hooks{RequestCompleter(stats), [stats](size_t n) { stats->set_pending(n); }});
    const ModelInfo& info = m->info;
    // Registered before its executors start: a name or alias taken twice fails before any process is spawned.
    ServedModel* served = m.get();
    registry_.add(std::move(m));
    served->pool = std::make_unique<ExecutorPool>(std::move(executors), *served->batcher, RequestCompleter(stats),
                                                  stats, spec.policy);
    spdlog::info("serving model {} (version {}{}): {} {} executor(s) on {}, max batch {}, max queue delay {} us{}",
                 info.name, info.version,
                 info.aliases.empty() ? "" : fmt::format(", also as {}", fmt::join(info.aliases, ", ")),
                 info.executors, info.share, info.device, info.max_batch_size, info.max_queue_delay_us,
                 spec.batcher.spread_over_idle_executors ? ", batches spread over the idle executors" : "");
  }
  if (config_.vad) vad_pool_ = std::make_unique<WorkPool>(kVadJobs);
  accepting_ = true;
}

bool InferenceCore::ready() const {
  if (!accepting_) return false;
  for (const auto& m : registry_.all())
    if (m->pool && m->pool->executors_up() == 0) return false;
  return true;
}

bool InferenceCore::live() const {
  for (const auto& m : registry_.all())
    if (m->pool)
      if (const auto none = m->pool->none_up_for(); none && *none > config_.no_executor_grace) return false;
  return true;
}

InferenceCore::~InferenceCore() { drain(); }

void InferenceCore::submit(Submission s, AnswerFn answer) {
  ServedModel* m = registry_.find(s.model, s.default_model_allowed, s.task);
  if (m == nullptr) {  // no series for a name the client chose: unbounded cardinality
    const ServeError e = s.model.empty() && s.default_model_allowed
                             ? ServeError(Outcome::kModelNotFound,
                                          fmt::format("this server serves no {} model", s.task), "model")
                             : unknown_model(registry_.infos(), s.model);
    RequestCompleter(nullptr)(refuse(request_of(s, std::string(s.model.substr(0, 128)), std::move(answer)), e));
    return;
  }
  const RequestCompleter complete(m->stats);
  std::unique_ptr<TranscriptionRequest> r = request_of(s, m->info.name, std::move(answer));
  if (s.refused) return complete(refuse(std::move(r), *s.refused));
  if (m->info.task != s.task)
    return complete(refuse(std::move(r), ServeError(Outcome::kInvalidInput,
                                                    fmt::format("model '{}' answers {}, not {}", m->info.name,
                                                                m->info.task, s.task),
                                                    "model")));
  if (!accepting_) return complete(reject(std::move(r), Outcome::kShuttingDown, "server is shutting down"));
  if (config_.enable_fault_injection && !s.fault.empty()) {
    const std::optional<InjectedFault> fault = parse_injected_fault(s.fault);
    if (!fault)
      return complete(refuse(std::move(r), ServeError(Outcome::kInvalidInput,
                                                      fmt::format("{} must be crash, hang, device-fault or oom",
                                                                  kFaultHeader))));
    if (m->info.share == "lanes" || m->info.share == "green")  // threads of this process: nothing survives a fault
      return complete(refuse(std::move(r), ServeError(Outcome::kInvalidInput,
                                                      fmt::format("{} needs worker processes, and model '{}' runs "
                                                                  "in {}",
                                                                  kFaultHeader, m->info.name, m->info.share))));
    r->fault = *fault;
  }
  ServedModel* diarizer = nullptr;
  double max_audio_seconds = m->info.max_audio_seconds;
  if (s.diarizer) {
    diarizer = registry_.find(*s.diarizer, true, "diarization");
    if (diarizer == nullptr || diarizer->info.task != "diarization")
      return complete(refuse(std::move(r), no_diarizer(*s.diarizer)));
    max_audio_seconds = std::min(max_audio_seconds, diarizer->info.max_audio_seconds);
  }
  try {
    DecodedInput in = decode_input(s.audio, max_audio_seconds);
    r->pcm = std::move(in.pcm);
    r->warnings = std::move(in.warnings);
  } catch (const Error& e) {
    return complete(refuse(std::move(r), serve_error(e, s.audio_field)));
  }
  r->input_ms = ms_between(s.received, Clock::now());
  const bool transcription = m->info.task == "transcription";
  // With the VAD on (any mode but off): speakers kept to speech (diarization_gate.h), silent pieces not run.
  const bool gate_speakers = config_.vad_mode != vad::VadMode::kOff;
  // The VAD's regions when it applies to a transcription: they cut its audio, and keep its speakers to speech. Found
  // below, after the diarization is queued, so that the diarizer runs meanwhile (an hour's VAD takes a second or
  // more); its gate waits for them.
  const bool run_vad = transcription && config_.vad &&
                       vad::vad_applies(config_.vad_mode, static_cast<double>(r->pcm.size()) / kPcmSampleRate);
  std::promise<std::optional<std::vector<vad::SampleRange>>> speech_found;
  const DiarizationGate::Speech speech_later = speech_found.get_future().share();
  if (diarizer) {
    // Decoded once; each model's batcher and executors run their own request, side by side. A failure of one does
    // not stop the other (the cancellation flag is the client's): it finishes, and the join answers the failure.
    auto [transcription_done, diarization_done] = join_answers(std::move(r->done));
    r->done = std::move(transcription_done);
    std::unique_ptr<TranscriptionRequest> d = diarization_of(*r, diarizer->info.name);
    d->done = std::move(diarization_done);
    if (gate_speakers) d->done = gated(std::move(d->done), std::make_shared<DiarizationGate>(d->pcm, speech_later));
    diarizer->batcher->submit(std::move(d));
  }
  r->on_words = std::move(s.on_words);
  if (!transcription && gate_speakers)
    r->done = gated(std::move(r->done), std::make_shared<DiarizationGate>(r->pcm, std::nullopt));
  if (!run_vad) {
    speech_found.set_value(std::nullopt);
    return queue(*m, std::move(r), std::nullopt, gate_speakers);
  }
  // The VAD on a pool of its own: a front end's thread is free for the next request meanwhile.
  struct VadJob {
    std::unique_ptr<TranscriptionRequest> request;
    std::promise<std::optional<std::vector<vad::SampleRange>>> speech_found;
  };
  auto job = std::make_shared<VadJob>(VadJob{std::move(r), std::move(speech_found)});
  std::unique_lock lock(vad_mu_);
  if (!vad_pool_) {  // drain() has begun since the check above
    lock.unlock();
    job->speech_found.set_value(std::nullopt);
    return complete(reject(std::move(job->request), Outcome::kShuttingDown, "server is shutting down"));
  }
  vad_pool_->post([this, m, job, gate_speakers] {
    std::optional<std::vector<vad::SampleRange>> speech;
    try {  // a client gone meanwhile costs no VAD: the batcher answers its request as cancelled
      if (!job->request->cancelled->load()) speech = config_.vad->regions(job->request->pcm);
    } catch (const std::exception& e) {  // answered, so that a diarization queued beside it is joined and answered
      job->speech_found.set_value(std::nullopt);
      return RequestCompleter(m->stats)(reject(std::move(job->request), Outcome::kInternal,
                                               fmt::format("voice activity detection failed: {}", e.what())));
    }
    job->speech_found.set_value(speech);
    queue(*m, std::move(job->request), speech, gate_speakers);
  });
}

void InferenceCore::queue(ServedModel& m, std::unique_ptr<TranscriptionRequest> r,
                          const std::optional<std::vector<vad::SampleRange>>& speech, bool gate_speakers) {
  if (m.info.task == "transcription") {
    if (speech) cut_to_speech(*r, *speech);
    if (runs_in_pieces(*r, m.info.piece_seconds))
      return run_in_pieces(std::move(r), *m.batcher, RequestCompleter(m.stats),
                           piece_settings(m.info, m.batcher->config().default_priority_level, gate_speakers),
                           piecewise_);
  }
  if (r->on_words) words_before_answer(*r);
  m.batcher->submit(std::move(r));  // also refuses once drain() has shut it down
}

void InferenceCore::drain() {
  std::lock_guard lock(drain_mu_);
  if (drained_) return;
  accepting_ = false;
  std::unique_ptr<WorkPool> vad_pool;
  {
    std::lock_guard lock(vad_mu_);
    vad_pool = std::move(vad_pool_);
  }
  vad_pool.reset();  // the VADs under way finish and queue their requests, while the batchers still take them
  piecewise_.stop_and_wait();  // long requests stop at a piece boundary, while the batchers still take pieces
  // Every batcher stops taking work first, then each model's executors finish what is queued and running.
  for (const auto& m : registry_.all()) m->batcher->shutdown();
  for (const auto& m : registry_.all()) m->pool->join();
  drained_ = true;
  spdlog::info("inference core drained");
}

std::vector<ModelStatsSnapshot> InferenceCore::statistics(const std::vector<std::string>& models) const {
  std::vector<ModelStatsSnapshot> out;
  for (const std::string& name : models)
    if (const ServedModel* m = registry_.find(name, false)) out.push_back(m->stats->snapshot());
  return out;
}

}  // namespace steno::serve
