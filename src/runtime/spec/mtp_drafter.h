// MtpDrafter: drafts with DeepSeek-V3/R1's multi-token-prediction module. After each step it runs the module over the
// positions the main model just computed (token p+1 with the main hidden state at p, into the module's own KV cache
// at the main cache's block tables); the last row's argmax is the first draft token. Further tokens chain the one
// module as vLLM does: the next row takes the drafted token and the module's own output state.
#pragma once

#include <memory>

#include "model/kv_cache.h"
#include "model/model.h"
#include "runtime/spec/drafter.h"

namespace cai {

class MtpDrafter final : public Drafter {
 public:
  // For a main KV cache of n_blocks blocks of block_size positions; unsupported when the model has no MTP module.
  static Result<std::unique_ptr<MtpDrafter>> create(Model& model, int n_blocks, int block_size);
  bool needs_hidden() const override { return true; }
  Result<std::vector<std::vector<int32_t>>> draft(std::span<const DraftSeq> seqs, const float* hidden) override;

 private:
  MtpDrafter(MtpModule& mtp, int vocab, int hidden, KvCache kv)
      : mtp_(mtp), vocab_(vocab), hidden_(hidden), kv_(std::move(kv)) {}

  MtpModule& mtp_;
  int vocab_, hidden_;
  KvCache kv_;
  std::vector<float> rows_hidden_, logits_, block_out_;  // host staging, reused
};

}  // namespace cai
