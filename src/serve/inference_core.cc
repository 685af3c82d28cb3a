#include "steno/serve/inference_core.h"

#include <spdlog/spdlog.h>

#include <set>

#include "steno/core/error.h"

namespace steno::serve {

// Declaration order is destruction order in reverse: executors stop before the batcher they pull from goes away.
struct InferenceCore::Served {
  ModelSpec spec;
  ModelMetrics* metrics;
  std::unique_ptr<fleet::FleetMetrics> fleet_metrics;  // worker processes only
  std::unique_ptr<DynamicBatcher> batcher;
  std::unique_ptr<LaneExecutor> lanes;                // one of these two
  std::unique_ptr<fleet::ProcessExecutor> workers;

  void join() {
    if (lanes) lanes->join();
    if (workers) workers->join();
  }
};

InferenceCore::InferenceCore(std::vector<ModelSpec> models, CoreConfig config)
    : config_(std::move(config)), metrics_(config_.registry) {
  STENO_CHECK(!models.empty(), "the inference core needs at least one model");
  config_.batcher.validate();
  STENO_CHECK(config_.lanes.lanes >= 1, "need at least one executor lane, got {}", config_.lanes.lanes);
  const int threads = config_.lanes.resolved_threads_per_lane();
  const char* spread_note =
      config_.batcher.spread_over_idle_executors ? ", batches spread over the idle executors" : "";
  std::set<std::string> names;
  for (const ModelSpec& spec : models) {  // all checks before any thread starts
    STENO_CHECK(!spec.name.empty(), "a served model needs a name");
    STENO_CHECK(names.insert(spec.name).second, "model '{}' is listed twice", spec.name);
    STENO_CHECK(spec.runners || spec.model || spec.processes, "model '{}' has neither weights nor runners",
                spec.name);
  }
  for (ModelSpec& spec : models) {
    if (!spec.runners && !spec.processes) spec.runners = transcriber_runners(spec.model, threads, config_.lanes.gemm);
    auto s = std::make_unique<Served>();
    s->spec = std::move(spec);
    s->metrics = &metrics_.add_model(s->spec.name, s->spec.version);
    ModelMetrics* m = s->metrics;
    s->batcher = std::make_unique<DynamicBatcher>(
        config_.batcher,
        DynamicBatcher::Hooks{RequestCompleter(m), [m](size_t queued) { m->set_pending(queued); }});
    if (s->spec.processes) {
      s->fleet_metrics = std::make_unique<fleet::FleetMetrics>(*metrics_.registry(), s->spec.name, s->spec.version,
                                                               s->spec.processes->workers);
      s->workers = std::make_unique<fleet::ProcessExecutor>(*s->spec.processes, *s->batcher, RequestCompleter(m), m,
                                                            s->fleet_metrics.get());
      spdlog::info("serving model {} (version {}): {} worker processes x {} threads, max batch {}, max queue delay "
                   "{} us{}",
                   s->spec.name, s->spec.version, s->spec.processes->workers, s->spec.processes->command.threads,
                   config_.batcher.max_batch_size, config_.batcher.max_queue_delay.count(), spread_note);
    } else {
      s->lanes = std::make_unique<LaneExecutor>(config_.lanes.lanes, s->spec.runners, *s->batcher,
                                                RequestCompleter(m), m);
      spdlog::info("serving model {} (version {}): {} lanes x {} threads, max batch {}, max queue delay {} us{}",
                   s->spec.name, s->spec.version, config_.lanes.lanes, threads, config_.batcher.max_batch_size,
                   config_.batcher.max_queue_delay.count(), spread_note);
    }
    served_.push_back(std::move(s));
  }
  accepting_ = true;
}

InferenceCore::~InferenceCore() { drain(); }

InferenceCore::Served* InferenceCore::find(const std::string& name) const {
  for (const auto& s : served_)
    if (s->spec.name == name) return s.get();
  return nullptr;
}

void InferenceCore::submit(std::unique_ptr<TranscriptionRequest> request) {
  if (!request) return;
  Served* s = find(request->model);
  if (!s) {
    std::string known;
    for (const auto& m : served_) known += (known.empty() ? "" : ", ") + m->spec.name;
    std::string message = fmt::format("unknown model '{}' (served: {})", request->model.substr(0, 128), known);
    RequestCompleter(nullptr)(reject(std::move(request), Outcome::kUnknownModel, std::move(message)));
    return;
  }
  if (!accepting_) {
    RequestCompleter(s->metrics)(
        reject(std::move(request), Outcome::kShuttingDown, "server is shutting down"));
    return;
  }
  s->batcher->submit(std::move(request));  // also refuses once drain() has shut it down
}

std::vector<std::string> InferenceCore::models() const {
  std::vector<std::string> names;
  for (const auto& s : served_) names.push_back(s->spec.name);
  return names;
}

bool InferenceCore::ready() const { return accepting_; }

void InferenceCore::drain() {
  std::lock_guard lock(drain_mu_);
  if (drained_) return;
  accepting_ = false;
  // Every batcher stops taking work first, then each model's lanes finish what is queued and running.
  for (auto& s : served_) s->batcher->shutdown();
  for (auto& s : served_) s->join();
  drained_ = true;
  spdlog::info("inference core drained");
}

std::string InferenceCore::render_metrics() const { return metrics_.render(); }

}  // namespace steno::serve
