// The plain structs the scheduler hands the engine each step, and what the engine hands back.
#pragma once

#include <cstdint>
#include <vector>

namespace cai {

enum class RequestStatus {
  kWaiting,            // queued, never admitted
  kRunning,            // holds KV blocks; scheduled every step while the budget lasts
  kPreempted,          // lost its blocks to an older request; queued at the front, recomputes on return
  kFinishedStop,       // the engine saw a stop condition (EOS, stop string)
  kFinishedLength,     // generated max_tokens
  kFinishedCancelled,  // cancelled by the client
  kFinishedError,      // the engine failed it
};
const char* request_status_name(RequestStatus s);
inline bool is_finished(RequestStatus s) { return s >= RequestStatus::kFinishedStop; }

// One request's work in a step: compute positions [start, start + n_new). With a speculative draft the last n_draft of
// them are drafted tokens after the request's last known one: the step verifies them (logits for the last n_draft + 1
// rows) and keeps the positions of those accepted.
struct ScheduledRequest {
  uint64_t id = 0;
  int start = 0;                     // the request's n_computed before the step
  int n_new = 0;                     // tokens to compute, >= 1 (drafts included)
  std::vector<int32_t> tokens;       // their ids: tokens[start, start + n_new - n_draft) of the request, then the draft
  std::vector<int32_t> block_table;  // covers at least start + n_new positions; slot via kv_slot()
  bool sample = false;               // the step reaches the last known token: sample the next one
  int n_draft = 0;                   // drafted tokens at the end of `tokens` (only when sample)
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> requests;  // running requests (admission order), then newly admitted ones
  std::vector<uint64_t> preempted;         // preempted this step: their KV is gone, they will recompute
  int n_tokens = 0;                        // sum of n_new
};

// The engine's result for a request scheduled with sample = true: the draft tokens it accepted (a prefix of the
// scheduled draft), then the token it sampled after them.
struct SampledToken {
  uint64_t id = 0;
  int32_t token = 0;
  bool stop = false;  // finish after this token (EOS or a stop string); the token is still appended
  std::vector<int32_t> accepted{};
};

struct FinishedRequest {
  uint64_t id = 0;
  RequestStatus status = RequestStatus::kFinishedStop;
  int n_generated = 0;
};

}  // namespace cai
