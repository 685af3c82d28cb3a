// One client answer from two requests of one submission: its transcription and its diarization, run side by side
// by their own models (Submission::diarizer). Each request is still counted, logged and completed by its own
// model's RequestCompleter; only the client's AnswerFn is shared, and it is called once, when both have finished.
#pragma once

#include <utility>

#include "steno/serve/service.h"

namespace steno::serve {

// The answer functions of the transcription request (first) and of the diarization request (second). Whichever
// finishes last calls `answer` on its own thread with the transcription's response carrying the diarization, or
// with the first failure: the transcription's if it failed, else the diarization's.
std::pair<AnswerFn, AnswerFn> join_answers(AnswerFn answer);

}  // namespace steno::serve
