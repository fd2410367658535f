// speculative_greedy: sequences decoded greedily with a drafter, outside the serving engine (cai eval, cai bench):
// each step computes every sequence's last token and its draft, keeps the draft tokens the greedy choice confirms
// and the choice after them, and hands the drafter what the step computed — the engine's loop without its scheduler.
#pragma once

#include <vector>

#include "model/model.h"
#include "runtime/spec/drafter.h"
#include "runtime/spec/spec_options.h"

namespace cai {

struct SpecRun {
  std::vector<std::vector<int32_t>> generated;  // per sequence: its greedy tokens
  int steps = 0;                                // decode steps after the prompts' step
  int64_t seq_steps = 0;                        // of those, summed over the sequences each one computed
  int64_t drafted = 0, accepted = 0;            // draft tokens verified and accepted, over all sequences
  // By position in the draft (index 0: the first draft token): how often one was verified there, and accepted.
  std::vector<int64_t> drafted_at, accepted_at;
  double prompt_seconds = 0, decode_seconds = 0;
  double draft_seconds = 0;  // of decode_seconds, in the drafter
};

// n_gen greedy tokens for each prompt (the prompts computed together in one step first), drafting with `spec`'s
// method (off: one token per sequence and step; draft: with `draft_model`). Sets the model's devices batch invariant
// for the run, as the engine does.
Result<SpecRun> speculative_greedy(Model& model, const SpecOptions& spec,
                                   const std::vector<std::vector<int32_t>>& prompts, int n_gen,
                                   Model* draft_model = nullptr);

}  // namespace cai
