// Log-probabilities of a sampled token and its best alternatives (OpenAI `logprobs` / `top_logprobs`).
#pragma once

#include <span>

#include "cai/engine.h"
#include "tokenizer/tokenizer.h"

namespace cai {

// log softmax of the raw (unpenalised) logits, read at `token`, plus the `n_top` most likely tokens.
TokenLogprob token_logprobs(std::span<const float> logits, int32_t token, int n_top, const Tokenizer& tok);

}  // namespace cai
