#include "serve/piecewise.h"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "steno/asr/pieces.h"

namespace steno::serve {
namespace {

class PiecewiseRun : public std::enable_shared_from_this<PiecewiseRun> {
 public:
  PiecewiseRun(std::unique_ptr<TranscriptionRequest> whole, DynamicBatcher& batcher, RequestCompleter complete,
               const PieceSettings& settings, PiecewiseRuns& runs)
      : whole_(std::move(whole)),
        pieces_(asr::cut_into_pieces(whole_->pcm, kPcmSampleRate, settings.seconds)),
        batcher_(batcher),
        complete_(complete),
        window_(std::max<size_t>(1, settings.window)),
        priority_((whole_->priority == 0 ? settings.default_priority_level : whole_->priority) + 1),
        skip_silent_(settings.skip_silent),
        runs_(runs),
        held_(runs.enter()),
        done_(pieces_.size()) {
    whole_->ran_as_pieces = true;
  }

  // Queues pieces while the window has room; answers once nothing is left to wait for.
  void pump() {
    for (;;) {
      std::unique_ptr<TranscriptionRequest> piece;
      size_t silent = pieces_.size();
      {
        std::lock_guard lock(mu_);
        if (stopped() || next_ >= pieces_.size() || in_flight_ >= window_) break;
        const asr::AudioPiece& span = pieces_[next_];
        const auto audio = std::span<const float>(whole_->pcm).subspan(span.begin, span.end - span.begin);
        ++in_flight_;
        if (skip_silent_ && asr::is_silent(audio))
          silent = next_++;
        else
          piece = make_piece(next_++);
      }
      if (silent < pieces_.size()) {  // no words, without running
        TranscriptionResponse none;
        none.transcript.audio_seconds =
            static_cast<double>(pieces_[silent].end - pieces_[silent].begin) / kPcmSampleRate;
        record(silent, std::move(none));  // (not piece_done: no recursion through pump)
        continue;
      }
      batcher_.submit(std::move(piece));  // a refusal comes back through piece_done at once
    }
    finish_if_done();
  }

 private:
  // Under mu_.
  bool stopped() const { return answered_ || failure_ || whole_->cancelled->load() || runs_.stopping(); }

  std::unique_ptr<TranscriptionRequest> make_piece(size_t i) {
    const asr::AudioPiece& span = pieces_[i];
    auto p = std::make_unique<TranscriptionRequest>();
    p->id = fmt::format("{}#{}", whole_->id, i);
    p->model = whole_->model;
    p->pcm.assign(whole_->pcm.begin() + static_cast<std::ptrdiff_t>(span.begin),
                  whole_->pcm.begin() + static_cast<std::ptrdiff_t>(span.end));
    p->priority = priority_;
    p->deadline = whole_->deadline;
    p->cancelled = whole_->cancelled;
    p->piece = true;
    if (i == 0) p->fault = whole_->fault;  // tests: the request's fault rides on its first piece
    p->done = [self = shared_from_this(), i](TranscriptionResponse r) { self->piece_done(i, std::move(r)); };
    return p;
  }

  void piece_done(size_t i, TranscriptionResponse r) {
    record(i, std::move(r));
    pump();
  }

  // A piece's answer: joined, and handed on with every stretch now done in order.
  void record(size_t i, TranscriptionResponse r) {
    {
      std::lock_guard lock(mu_);
      --in_flight_;
      if (!r.ok()) {
        if (!failure_) failure_ = std::move(r);
      } else {
        if (!first_batch_size_) first_batch_size_ = r.batch_size;
        if (i == 0) durations_.queue_ms = r.durations.queue_ms;  // when the request first ran
        durations_.compute_ms += r.durations.compute_ms;
        durations_.features_ms += r.durations.features_ms;
        durations_.encoder_ms += r.durations.encoder_ms;
        durations_.decoder_ms += r.durations.decoder_ms;
        durations_.detokenize_ms += r.durations.detokenize_ms;
        done_[i] = std::move(r.transcript);
      }
      // Every stretch now done in order joins the transcript and goes to the client, under the lock so that
      // stretches leave in order (on_words only queues bytes).
      while (!failure_ && emitted_ < pieces_.size() && done_[emitted_]) {
        asr::Transcript stretch;
        const double offset = static_cast<double>(pieces_[emitted_].begin) / kPcmSampleRate;
        asr::clamp_to_piece(*done_[emitted_]);
        asr::append_piece(stretch, std::move(*done_[emitted_]), offset, 0);
        done_[emitted_].reset();
        ++emitted_;
        if (whole_->on_words && !stretch.text.empty()) whole_->on_words(stretch);
        asr::append_piece(joined_, std::move(stretch), 0, 0);
      }
    }
  }

  void finish_if_done() {
    std::optional<Completion> c;
    {
      std::lock_guard lock(mu_);
      if (answered_ || in_flight_ > 0) return;
      if (!stopped() && emitted_ < pieces_.size()) return;
      answered_ = true;
      c.emplace();
      if (failure_) {
        c->response = std::move(*failure_);
      } else if (emitted_ < pieces_.size()) {
        const bool cancelled = whole_->cancelled->load();
        c->response.outcome = cancelled ? Outcome::kCancelled : Outcome::kShuttingDown;
        c->response.message = cancelled ? "cancelled" : "server is shutting down";
      } else {
        c->response.transcript = std::move(joined_);
        c->response.durations = durations_;
        c->response.batch_size = first_batch_size_;
      }
      whole_->on_words = nullptr;  // nothing after the answer
      c->request = std::move(whole_);
    }
    complete_(std::move(*c));
    held_.reset();  // the run has answered: a drain may go on
  }

  std::unique_ptr<TranscriptionRequest> whole_;  // its audio, until it is answered
  const std::vector<asr::AudioPiece> pieces_;
  DynamicBatcher& batcher_;
  const RequestCompleter complete_;
  const size_t window_;
  const int priority_;
  const bool skip_silent_;
  PiecewiseRuns& runs_;
  std::shared_ptr<void> held_;

  std::mutex mu_;
  size_t next_ = 0, in_flight_ = 0, emitted_ = 0;
  std::vector<std::optional<asr::Transcript>> done_;  // finished pieces not yet joined
  asr::Transcript joined_;
  std::optional<TranscriptionResponse> failure_;
  StageDurations durations_;
  int first_batch_size_ = 0;
  bool answered_ = false;
};

}  // namespace

std::shared_ptr<void> PiecewiseRuns::enter() {
  {
    std::lock_guard lock(mu_);
    ++running_;
  }
  return std::shared_ptr<void>(nullptr, [this](void*) {
    std::lock_guard lock(mu_);
    if (--running_ == 0) idle_.notify_all();
  });
}

void PiecewiseRuns::stop_and_wait() {
  std::unique_lock lock(mu_);
  stopping_ = true;
  idle_.wait(lock, [&] { return running_ == 0; });
}

bool PiecewiseRuns::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

PieceSettings piece_settings(const ModelInfo& info, int default_priority_level, bool skip_silent) {
  PieceSettings s;
  s.skip_silent = skip_silent;
  s.seconds = info.piece_seconds;
  s.default_priority_level = default_priority_level;
  const int executors = std::max(1, info.executors);
  const int window = info.pieces_in_flight > 0 ? info.pieces_in_flight
                     : info.on_gpu            ? executors * std::max(1, info.max_batch_size / 2)
                                              : executors;
  s.window = static_cast<size_t>(window);
  return s;
}

bool runs_in_pieces(const TranscriptionRequest& request, double piece_seconds) {
  return piece_seconds > 0 && static_cast<double>(request.pcm.size()) > piece_seconds * kPcmSampleRate;
}

void run_in_pieces(std::unique_ptr<TranscriptionRequest> whole, DynamicBatcher& batcher, RequestCompleter complete,
                   const PieceSettings& settings, PiecewiseRuns& runs) {
  std::make_shared<PiecewiseRun>(std::move(whole), batcher, complete, settings, runs)->pump();
}

}  // namespace steno::serve
