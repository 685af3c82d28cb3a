#include "serve/answer_join.h"

#include <memory>
#include <mutex>
#include <optional>

namespace steno::serve {
namespace {

struct Join {
  std::mutex mu;
  std::optional<TranscriptionResponse> transcription, diarization;
  AnswerFn answer;
};

TranscriptionResponse combine(TranscriptionResponse transcription, TranscriptionResponse diarization) {
  if (!transcription.ok()) return transcription;
  if (!diarization.ok()) {
    // The audio's warnings were handed to the transcription request alone (one copy for the client).
    diarization.warnings = std::move(transcription.warnings);
    return diarization;
  }
  transcription.diarization = std::move(diarization.diarization);
  return transcription;
}

void arrive(const std::shared_ptr<Join>& join, TranscriptionResponse response, bool is_transcription) {
  std::optional<TranscriptionResponse> transcription, diarization;
  {
    std::lock_guard lock(join->mu);
    (is_transcription ? join->transcription : join->diarization) = std::move(response);
    if (!join->transcription || !join->diarization) return;
    transcription = std::move(join->transcription);
    diarization = std::move(join->diarization);
  }
  // Outside the lock: the answer renders and writes, and nothing else can arrive any more.
  join->answer(combine(std::move(*transcription), std::move(*diarization)));
}

}  // namespace

std::pair<AnswerFn, AnswerFn> join_answers(AnswerFn answer) {
  auto join = std::make_shared<Join>();
  join->answer = std::move(answer);
  return {[join](TranscriptionResponse r) { arrive(join, std::move(r), true); },
          [join](TranscriptionResponse r) { arrive(join, std::move(r), false); }};
}

}  // namespace steno::serve
