// One `cai chat` reply: the prompt goes to the engine, the text streams to stdout as it is generated (R1 reasoning,
// the text inside <think>…</think>, dimmed on a terminal), and Ctrl-C cancels the request.
#pragma once

#include <string>

#include "cai/engine.h"

namespace cai::cli {

struct ReplyResult {
  std::string content;                        // the answer: the text outside <think>…</think>
  FinishReason finish = FinishReason::kNone;  // kCancelled when Ctrl-C stopped it
  int n_prompt_tokens = 0;
  int n_cached_prompt_tokens = 0;
  int n_generated_tokens = 0;
  double seconds = 0;  // from submission to the last event
};

// Streams the reply to `request` (its prompt_opens_think says whether the output starts as reasoning). `styled`:
// write ANSI SGR 2 (dim) around the reasoning. Errors: the engine's on submission, or the one it ends the request
// with.
Result<ReplyResult> stream_reply(Engine& engine, GenerationRequest request, bool styled);

}  // namespace cai::cli
