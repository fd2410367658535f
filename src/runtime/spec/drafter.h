// Drafter: proposes the tokens speculative decoding verifies. After every engine step it sees each sequence the step
// computed (its tokens, the positions now in the KV cache, the main model's hidden states of the step's rows) and
// returns a draft for each sequence that asked for one. Drafts are the drafter's most likely tokens (point
// proposals): the engine's verification then keeps the output distribution exactly the target model's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace cai {

// One sequence after a step.
struct DraftSeq {
  uint64_t id = 0;
  std::span<const int32_t> tokens;       // prompt + generated; the last one's KV is not computed yet
  int n_computed = 0;                    // positions [0, n_computed) hold the main model's KV (tokens[0, n_computed))
  int step_start = 0;                    // the first position this step computed
  int step_row = 0;                      // its row in the step's hidden states
  std::span<const int32_t> block_table;  // covers positions [0, n_computed + max_draft)
  int max_draft = 0;                     // tokens wanted; 0: the drafter only keeps up (a prompt chunk)
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Whether draft() reads the main model's final hidden states ([n_rows, hidden] F32 of the step's rows).
  virtual bool needs_hidden() const = 0;
  // Drafts of at most max_draft tokens, one per sequence (empty where none is wanted or found).
  virtual Result<std::vector<std::vector<int32_t>>> draft(std::span<const DraftSeq> seqs, const float* hidden) = 0;
};

}  // namespace cai
