// StepMessage: one engine step as the leader broadcasts it to the worker processes of an MPI job: what to do (run a
// step of the model or of its MTP module, or stop), the KV cache's shape, and the StepBatch (token ids, positions, KV
// slots, rows wanting logits, the sequences and the used part of each one's block table) as 32-bit integers; an MTP
// step also sends the main model's hidden states it starts from.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/model.h"

namespace cai::dist {

enum class StepKind : int64_t { kStep = 1, kStop = 2, kMtp = 3 };

// Sent first, fixed size: the workers learn how many payload integers (then floats) follow, and the shape of the
// leader's KV cache for the step (its host tier included: each rank's cache keeps the same layers in host memory, for
// its own devices); for kMtp the MTP module's cache, and n_floats the hidden states [n_tok, hidden].
struct StepHeader {
  int64_t kind = 0;
  int64_t n_ints = 0;
  int64_t kv_blocks = 0, kv_block_size = 0;
  int64_t kv_host_layers = 0, kv_step_tokens = 0;
  int64_t n_floats = 0;
};

// The batch as integers; block_size tells how much of each block table the sequence uses.
std::vector<int32_t> encode_step(const StepBatch& batch, int block_size);

// A batch decoded from encode_step's integers; its sequences' block tables point into `tables`, so it moves as a whole.
struct DecodedStep {
  StepBatch batch;
  std::vector<int32_t> tables;
};
// Errors: counts that do not match the integers given (corrupt).
Result<DecodedStep> decode_step(const std::vector<int32_t>& ints, int block_size);

}  // namespace cai::dist
