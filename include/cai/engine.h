// The serving engine's public API: submit token prompts, receive streamed text events, cancel, read stats.
// One engine thread runs schedule → forward(batch) → sample → emit over a paged KV cache (continuous batching).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model_loader.h"
#include "runtime/grammar/grammar.h"
#include "runtime/sampler.h"
#include "runtime/spec/spec_options.h"

namespace cai {

struct EngineOptions {
  int max_batch = 16;             // most sequences in one step
  int max_tokens_per_step = 512;  // token budget per step (chunked prefill falls out of it)
  int block_size = 16;            // KV cache positions per block
  int n_kv_blocks = 0;            // 0 = derive from kv_memory_bytes
  // 0 = from the device: on a device with its own memory, 90 % of what is free after the weights (at most what
  // max_batch full contexts need); on the host, 256 MiB.
  size_t kv_memory_bytes = 0;
  int ctx_size = 0;     // most tokens per sequence (prompt + generated); 0 = the model's context
  int max_queue = 256;  // waiting requests beyond which submit() fails with kResourceExhausted
  bool prefix_caching = true;
  // Thermal-aware batching: when the device reports at least this temperature the per-step token budget is halved
  // (repeatedly, down to max_batch), and doubled back once it is 5 °C cooler. 0 = off.
  float thermal_limit_c = 0.0f;
  // Host KV tier ("layered offload"): the K/V of the last this-many layers live in host memory and are streamed to the
  // device each step, so a device too small for the whole cache serves max_batch full contexts. The cache is then sized
  // for those contexts unless n_kv_blocks or kv_memory_bytes says otherwise. No effect on a device whose memory the
  // host addresses (the CPU). 0 = every layer on the device.
  int kv_offload_layers = 0;
  // Speculative decoding: each running sequence drafts up to spec.tokens tokens that the next step verifies with its
  // own; the output is what decoding without it gives (greedy: the same tokens; sampled: the same distribution).
  SpecOptions spec;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int max_tokens = 256;           // generated tokens at most (per choice)
  std::vector<std::string> stop;  // stop strings (not included in the output)
  bool ignore_eos = false;
  int top_logprobs = -1;  // -1: no logprobs; 0..20: logprob of the chosen token + this many alternatives
  // With top_logprobs >= 0: the first event of choice 0 also carries the log-probability of each prompt token given
  // the ones before it (StreamEvent::prompt_logprobs). The prompt is then computed whole, none of it taken from the
  // prefix cache, since the cached part's logits are gone.
  bool prompt_logprobs = false;
  // Choices (1..kMaxChoices) generated from the prompt, sharing its KV blocks. Choice i > 0 samples with a seed
  // derived from sampling.seed and i; choice 0 uses sampling.seed itself.
  int n = 1;
  // Reasoning budget: -1 = none; otherwise once this many tokens were generated inside <think> (opened by the prompt,
  // see prompt_opens_think, or by the model's first tokens) the tokens of "\n</think>\n\n" are forced.
  int max_reasoning_tokens = -1;
  bool prompt_opens_think = false;  // the prompt ends inside <think>: the output starts as reasoning
  // Structured output: the text after the reasoning (all of it without prompt_opens_think) is constrained to this
  // language by masking the logits before sampling (forced tokens bypass it); once it is complete and nothing may
  // follow, the choice finishes with kStop. Null: unconstrained.
  std::shared_ptr<const grammar::Grammar> grammar;
  // Speculative decoding for this request: its method (unset: the server's, EngineOptions::spec; off and ngram work
  // on every server, mtp and draft where the server runs them) and tokens per step (-1: the server's, 0: none,
  // otherwise at most the server's).
  std::optional<SpecMethod> spec_method;
  int spec_tokens = -1;
  static constexpr int kMaxChoices = 128;
};

struct TokenLogprob {
  int32_t token = 0;
  std::string text;
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;  // alternatives, best first
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

// What the engine reports for a request, in order per choice, from the engine thread. Each choice's last event has
// finish != kNone; a request with n choices ends after n such events.
struct StreamEvent {
  int index = 0;                       // the choice (0..n-1) this event belongs to
  std::string text;                    // new text since the previous event (UTF-8 complete; may be empty)
  std::vector<int32_t> tokens;         // token ids generated since the previous event
  std::vector<TokenLogprob> logprobs;  // one per token this event covers, when requested
  // GenerationRequest::prompt_logprobs: one per prompt token, in the first event of choice 0; the first token has no
  // context, so its logprob is NaN and it has no alternatives.
  std::vector<TokenLogprob> prompt_logprobs;
  FinishReason finish = FinishReason::kNone;
  std::string error;                        // when finish == kError
  std::string stop_sequence;                // when finish == kStop because of a stop string: that string ("" for EOS)
  StatusCode error_code = StatusCode::kOk;  // when finish == kError: e.g. kOutOfMemory when the device ran out
  int n_prompt_tokens = 0;
  int n_cached_prompt_tokens = 0;  // prompt tokens served from the prefix cache
  int n_generated_tokens = 0;
  int n_draft_tokens = 0;     // speculative tokens drafted for this choice so far
  int n_accepted_tokens = 0;  // of those, accepted
};

using EventCallback = std::function<void(const StreamEvent&)>;

struct EngineStats {
  int n_running = 0;
  int n_waiting = 0;
  int kv_blocks_total = 0;
  int kv_blocks_used = 0;
  std::string kv_dtype;             // KV cache element type: "f32", "bf16", "f16" or "q8_0"
  uint64_t kv_bytes_per_token = 0;  // KV cache bytes one token takes, all layers (KvSpec::bytes_per_token)
  uint64_t prompt_tokens = 0;       // prompt tokens received
  uint64_t prefix_hit_tokens = 0;   // prompt tokens not recomputed thanks to the prefix cache
  uint64_t computed_prompt_tokens = 0;
  uint64_t generated_tokens = 0;
  uint64_t preemptions = 0;
  uint64_t steps = 0;
  int token_budget = 0;                      // per-step budget now in force (lowered while the device is hot)
  int token_budget_max = 0;                  // the budget of a cool device (EngineOptions::max_tokens_per_step)
  int kv_offload_layers = 0;                 // layers whose KV lives in host memory (EngineOptions::kv_offload_layers)
  uint64_t kv_host_bytes = 0;                // host memory they take
  uint64_t kv_offload_uploaded_bytes = 0;    // host → device KV traffic so far
  uint64_t kv_offload_downloaded_bytes = 0;  // device → host (the rows each step wrote)
  uint64_t device_transfer_bytes = 0;  // activations moved between the model's devices (stage boundaries, experts)
  std::string spec_method = "off";     // speculative decoding: "off", "ngram", "mtp" or "draft"
  int spec_tokens = 0;                 // draft tokens per step and sequence at most
  uint64_t spec_draft_tokens = 0;      // drafted tokens verified so far
  uint64_t spec_accepted_tokens = 0;   // of those, accepted
  uint64_t spec_verify_steps = 0;      // sequence-steps that verified a draft
};

class Engine {
 public:
  // Takes ownership of the loaded model (and with options.spec.method kDraft, of the draft model); starts the engine
  // thread.
  static Result<std::unique_ptr<Engine>> create(LoadedModel model, const EngineOptions& options,
                                                LoadedModel draft = {});
  virtual ~Engine() = default;

  // Queue a request (all its n choices, or none). Errors: invalid_argument (empty prompt, prompt + max_tokens > ctx,
  // bad sampling values or n), resource_exhausted (the waiting queue has no room for n more sequences), unavailable
  // (shutting down). `on_event` must be quick and thread-safe.
  virtual Result<uint64_t> submit(GenerationRequest request, EventCallback on_event) = 0;
  // Stop a request (every choice) at the next step boundary and free its KV blocks; each unfinished choice gets a
  // final kCancelled event.
  virtual void cancel(uint64_t request_id) = 0;
  virtual EngineStats stats() const = 0;
  virtual const LoadedModel& model() const = 0;
  virtual int ctx_size() const = 0;
  // Stop accepting work, cancel everything, join the engine thread.
  virtual void shutdown() = 0;
};

}  // namespace cai
