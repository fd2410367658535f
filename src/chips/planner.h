// Deployment planner: model footprint + device profile + card count → layout, memory per card, the largest context
// and batch that fit, KV offload to host, roofline decode/prefill estimates and warnings (`cai plan`).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chips/device_profile.h"
#include "chips/model_footprint.h"
#include "core/status.h"

namespace cai::chips {

// The assumptions every plan states (also in its JSON "assumptions" and docs/chips.md).
inline constexpr double kBandwidthEfficiency = 0.8;  // achievable fraction of peak memory bandwidth
inline constexpr double kComputeEfficiency = 0.5;    // achievable fraction of peak BF16/INT8 throughput
inline constexpr double kRuntimeReserve = 0.08;  // card memory kept for the runtime (context, collectives, fragments)
inline constexpr int kCardsPerNode = 8;          // tensor/expert parallel stays inside one node
inline constexpr int kStepTokens = 512;          // default tokens per engine step (EngineOptions::max_tokens_per_step)
inline constexpr double kHostLinkGBs = 25.0;     // host↔card link for offloaded KV (PCIe 4.0 x16, achievable)
inline constexpr double kLinkEfficiency = 0.7;   // achievable fraction of the profile's interconnect_gbs
inline constexpr double kCollectiveLatencyUs = 10.0;  // fixed cost of one collective or stage transfer (NCCL-like)
inline constexpr int kActivationBytes = 4;            // the engine's activations are F32 on every device
inline constexpr int kMaxPlannedCards = 4096;

struct PlanRequest {
  int cards = 1;
  int64_t ctx = 0;                   // tokens per sequence; 0 = the model's max_position_embeddings
  int batch = 1;                     // concurrent sequences
  std::string kv_dtype;              // "" = the profile's policy, else bf16 (f32 on the cpu backend)
  std::optional<double> memory_gib;  // per card; overrides the profile's (which CPU profiles leave empty)
  int step_tokens = kStepTokens;     // tokens per engine step: sizes the activations and prefill's weight passes
  int threads = 0;                   // CPU: the threads the speeds are for (picks a measured efficiency); 0 = any
  bool assume_defaults = false;      // ignore the profile's measured_efficiency (cai bench measures against these)
};

// The fractions of peak bandwidth (decode, and prefill's passes over the weights) and of peak math (prefill) a plan's
// speeds assume, and where each came from: the profile's measured_efficiency entry for the chip's backend, the
// model's main weight type and the threads, else the defaults above.
struct PlanEfficiency {
  std::string weights;  // the model's main weight type (main_weight_type)
  double decode = kBandwidthEfficiency, prefill = kComputeEfficiency;
  std::string decode_source = "assumed", prefill_source = "assumed";
};
// The model's main weight type: the dtype most of its bytes are stored in, lowercase ("q4_0", "q4_k", "bf16").
std::string main_weight_type(const ModelFootprint& model);
PlanEfficiency plan_efficiency(const DeviceProfile& chip, const ModelFootprint& model, const PlanRequest& request);

struct PlanStage {
  int first_layer = 0;
  int n_layers = 0;
  size_t weights_bytes_per_card = 0;
  size_t kv_bytes_per_token_per_card = 0;  // this stage's layers, as one card holds them
  int kv_offload_layers = 0;
};

struct PlanLayout {
  int tensor_parallel = 1;    // attention and dense layers split over the cards of a stage
  int expert_parallel = 1;    // routed experts spread over the same cards (1 for dense models)
  int pipeline_parallel = 1;  // stages of consecutive layers, one node each
  int data_parallel = 1;      // independent replicas
  int cards_used = 1;
  std::vector<PlanStage> stages;
};

struct Plan {
  PlanRequest request;  // with ctx resolved
  std::string kv_dtype;
  PlanLayout layout;
  bool weights_fit = false;  // weights + activations fit on every card
  bool fits = false;         // ... and the KV cache of batch × ctx, on the card or (policy permitting) in host memory
  std::optional<int> min_cards;  // fewest cards that hold this request, KV included (none up to kMaxPlannedCards)
  size_t weights_bytes = 0;
  size_t weights_bytes_per_card = 0;  // the largest over stages
  size_t kv_bytes_per_token = 0;      // whole model, one token
  size_t kv_bytes_per_token_per_card = 0;
  size_t activation_bytes_per_card = 0;
  size_t card_bytes = 0;
  size_t reserved_bytes_per_card = 0;
  int64_t kv_capacity_tokens = 0;  // tokens of KV one replica's cards hold
  // The most any layout of these cards allows (the chosen one may trade context for replicas), KV on the cards only:
  int64_t max_context = 0;  // at the requested batch, capped at max_position_embeddings
  int64_t max_batch = 0;    // at the requested context, over all replicas
  int kv_offload_layers = 0;
  size_t kv_host_bytes = 0;   // host memory the offloaded KV takes, all cards
  int64_t active_params = 0;  // parameters one decode token reads (top-k experts)
  std::optional<double> decode_tok_s_per_sequence, decode_tok_s_aggregate, decode_step_ms;
  std::string decode_bound;  // "memory" or "compute"
  PlanEfficiency efficiency;
  // Time the layout's collectives and stage transfers add to a decode step and to a prefill (part of the numbers
  // above); empty where the chip's profile has no interconnect_gbs or the layout has one card.
  std::optional<double> decode_comm_ms, prefill_comm_seconds;
  std::optional<double> prefill_tok_s, prefill_seconds;
  std::vector<std::string> warnings;
};

Result<Plan> make_plan(const ModelFootprint& model, const DeviceProfile& chip, const PlanRequest& request);
nlohmann::json plan_to_json(const Plan& plan, const ModelFootprint& model, const DeviceProfile& chip);

}  // namespace cai::chips
