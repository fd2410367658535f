// Model: the interface every architecture implements; StepBatch is one forward step over many sequences.
#pragma once

#include <memory>
#include <vector>

#include "core/status.h"
#include "hal/collective.h"
#include "hal/hal.h"
#include "model/config.h"
#include "model/kv_cache.h"

namespace cai {

// The tokens one forward step computes. Rows of `tokens` are grouped per sequence as described by `seqs`
// (hal::AttnSeq: q_begin, n_q, pos0, block_table). `slots[i]` is the KV slot where token i's keys/values go.
struct StepBatch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<int32_t> slots;
  std::vector<hal::AttnSeq> seqs;
  std::vector<int32_t> logit_rows;  // token rows whose logits are wanted, in output order
};

// A StepBatch on the device: the model uploads its integer metadata in one copy per step, and every op reads it
// from there (tokens, positions, KV slots, rows wanting logits, and the attention batch of sequences + block tables).
struct StepTensors {
  TensorView tokens, positions, slots, logit_rows;  // I32 [n_tok], [n_tok], [n_tok], [n_logits]
  hal::AttnBatch attn;
};

// DeepSeek-V3/R1's multi-token-prediction module (the checkpoint's "nextn" layer): from the token at position p+1 and
// the main model's final hidden state at p (after the final norm) it predicts the token at p+2. It runs one decoder
// block over its own KV cache, at the main model's positions and block tables.
class MtpModule {
 public:
  virtual ~MtpModule() = default;
  // Its cache: a KvCache over these shards holds memory for the module's block only.
  virtual KvSpec mtp_kv_spec() const = 0;
  virtual std::vector<std::vector<KvShard>> mtp_kv_shards() const = 0;
  // Rows i of `batch` (tokens = the next tokens, positions = the hidden states' positions) with `hidden` [n_tok,
  // hidden] F32 host rows. Writes logits [logit_rows, vocab] and, where `block_out` is set, the block's output at the
  // logit rows ([logit_rows, hidden], before the module's final norm: the hidden state a chained draft step takes).
  virtual Status forward_mtp(const StepBatch& batch, const float* hidden, KvCache& kv, float* logits,
                             float* block_out) = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  virtual KvSpec kv_spec() const = 0;
  // The device of the first layer: telemetry, profile and bandwidth questions are asked of it.
  virtual hal::Device& device() const = 0;
  // Every device the model runs on, the first one first.
  virtual std::vector<hal::Device*> devices() const = 0;
  // Where each layer's KV cache lives: one shard per tensor-parallel rank, on the device its attention runs on.
  virtual std::vector<std::vector<KvShard>> kv_shards() const = 0;
  // What moves activations between the devices; null on one device.
  virtual const hal::Communicator* communicator() const = 0;
  // Run one step; writes logits [batch.logit_rows.size(), vocab] as F32 to host memory `logits`, and where `hidden`
  // is set the final hidden state (after the final norm) of every row, [n_tok, hidden] F32.
  virtual Status forward(const StepBatch& batch, KvCache& kv, float* logits, float* hidden = nullptr) = 0;
  // The multi-token-prediction module, where the model was loaded with it (LoadOptions::mtp); null otherwise.
  virtual MtpModule* mtp() { return nullptr; }
  virtual size_t weight_bytes() const = 0;
  // The part of weight_bytes() that lives on `device`.
  virtual size_t weight_bytes_on(const hal::Device& device) const = 0;
  // Weight bytes one decode step must stream (the roofline numerator): all weights but unread embedding rows.
  virtual size_t weight_bytes_per_token() const = 0;
  // Fault in the routed experts' weight pages now (mmapped weights); returns the bytes touched.
  virtual size_t prewarm_experts() const = 0;
  // --mlock: lock the weights as the model reads them (packed copies included) in RAM; see WeightStore::lock_in_memory.
  virtual Status lock_weights() const = 0;
};

}  // namespace cai
