// DecoderModel's multi-token-prediction module (DeepSeek-V3/R1 "nextn"): u = eh_proj([enorm(E[t_(p+1)]);
// hnorm(h_p)]), one decoder block over its own KV cache at position p, then its own final norm and the main head.
// The checkpoints' module copies of the embedding and head are not read: the main model's are the same tensors.
#include <algorithm>

#include "core/profile.h"
#include "hal/remote_device.h"
#include "model/decoder.h"
#include "ops/ops.h"

namespace cai {

Status DecoderModel::load_mtp(const LayerLoader& load_layer) {
  return load_mtp_rank(weights_, cfg_, 0, weights_.placement().head(), load_layer);
}

Status DecoderModel::load_mtp_rank(WeightStore& w, const ModelConfig& rank_cfg, int rank, hal::Device& device,
                                   const LayerLoader& load_layer) {
  const int layer = cfg_.num_hidden_layers;
  const int64_t hidden = cfg_.hidden_size;
  const std::string nextn = block_prefix(layer) + "nextn.";
  CAI_ASSIGN_OR_RETURN(BlockRank b, load_block_rank(w, rank_cfg, layer, rank, device, load_layer));
  mtp_block_.push_back(std::move(b));
  MtpRank m;
  CAI_ASSIGN_OR_RETURN(m.enorm, w.get_f32(nextn + "enorm.weight", {hidden}));
  CAI_ASSIGN_OR_RETURN(m.hnorm, w.get_f32(nextn + "hnorm.weight", {hidden}));
  CAI_ASSIGN_OR_RETURN(m.norm, w.get_f32(nextn + "shared_head_norm.weight", {hidden}));
  CAI_ASSIGN_OR_RETURN(m.eh_proj, w.get_gemm_weight(nextn + "eh_proj.weight", {hidden, 2 * hidden}));
  mtp_ranks_.push_back(m);
  return {};
}

KvSpec DecoderModel::mtp_kv_spec() const {
  KvSpec spec = kv_spec_;
  spec.n_layers = cfg_.num_hidden_layers + 1;  // the module's layer index; the layers before it hold nothing
  return spec;
}

std::vector<std::vector<KvShard>> DecoderModel::mtp_kv_shards() const {
  hal::Device* d = mtp_block_.empty() ? &device() : mtp_block_.front().device;
  std::vector<std::vector<KvShard>> shards(static_cast<size_t>(cfg_.num_hidden_layers), {{d, 0, 0}});
  shards.push_back(kv_shards_.back());  // the module's ranks are the last stage's, and cache as its layers do
  return shards;
}

Status DecoderModel::forward_mtp(const StepBatch& batch, const float* hidden, KvCache& kv, float* logits,
                                 float* block_out) {
  if (mtp_block_.empty()) return unsupported("the model was loaded without its MTP module");
  const int64_t n = static_cast<int64_t>(batch.tokens.size()), m = static_cast<int64_t>(batch.logit_rows.size());
  const int64_t h = cfg_.hidden_size;
  if (n == 0) return invalid_argument("forward_mtp: empty batch");
  if (kv.spec().n_layers != cfg_.num_hidden_layers + 1) return invalid_argument("forward_mtp: not the module's cache");
  CAI_TRY(upload_step(batch, kv));
  profile::Scope scope("mtp");
  CAI_ASSIGN_OR_RETURN(TensorView e, group_.ws(*embed_device_).f32("mtp.embed", {n, h}));
  CAI_TRY(ops::embed(*embed_device_, tok_embd_, step_on(*embed_device_).tokens, e));
  // Each rank: u = eh_proj([enorm(e); hnorm(hidden)]), the same on every rank, then the block's share.
  std::vector<TensorView> xs;
  for (size_t r = 0; r < mtp_block_.size(); ++r) {
    hal::Device& d = *mtp_block_[r].device;
    const MtpRank& m = mtp_ranks_[r];
    Workspace& ws = group_.ws(d);
    TensorView er = e;
    if (embed_device_ != &d) {
      CAI_ASSIGN_OR_RETURN(er, group_.move_to(e, d, "mtp.embed_in"));
    }
    CAI_ASSIGN_OR_RETURN(TensorView hin, ws.f32("mtp.hidden", {n, h}));
    CAI_ASSIGN_OR_RETURN(TensorView en, ws.f32("mtp.enorm", {n, h}));
    CAI_ASSIGN_OR_RETURN(TensorView hn, ws.f32("mtp.hnorm", {n, h}));
    CAI_ASSIGN_OR_RETURN(TensorView cat, ws.f32("mtp.cat", {n, 2 * h}));
    CAI_ASSIGN_OR_RETURN(TensorView x, ws.f32("mtp.x", {n, h}));
    CAI_TRY(d.default_stream().copy_to_device(hin.data, hidden, hin.n_bytes()));
    CAI_TRY(ops::rms_norm(d, er, m.enorm, cfg_.rms_norm_eps, en));
    CAI_TRY(ops::rms_norm(d, hin, m.hnorm, cfg_.rms_norm_eps, hn));
    CAI_TRY(ops::copy_cols(d, en, 0, cat, 0, h));  // the embedding half first, as the released weights expect
    CAI_TRY(ops::copy_cols(d, hn, 0, cat, h, h));
    CAI_TRY(ops::dense_gemm(d, m.eh_proj, cat, nullptr, x));
    xs.push_back(x);
  }
  CAI_TRY(run_block(mtp_block_, cfg_.num_hidden_layers, xs, kv));
  if (m == 0) return {};
  // The module's own final norm, then the main head: each head rank's vocabulary rows into their columns.
  for (size_t r = 0; r < mtp_block_.size(); ++r)
    CAI_TRY(head_logits(r, xs[r], mtp_ranks_[r].norm, m, logits, block_out));
  return {};
}

}  // namespace cai
