// DecoderModel: loading of the shared parts (on one rank or tensor-parallel ranks) and the forward pass.
#include "model/decoder.h"

#include <algorithm>

#include "core/profile.h"
#include "hal/remote_device.h"
#include "model/arch_registry.h"
#include "ops/ops.h"

namespace cai {

namespace {

// The activations the output head multiplies on a fast path may be 8-bit whatever its weight type when the layers'
// weights are coarser than 8 bits (4- to 6-bit layers beside a Q8_0 head, as llama.cpp writes Qwen2-0.5B's tied
// embedding): their own rounding then dwarfs what 8-bit activations add, as the KL against the F16 file's logits of
// TinyStories-656K with Q4_0 layers and a Q8_0 head shows (docs/perf/2026-12-03-q8_0-head-int8.md). Otherwise (8-bit
// or wider layers) the weight's own grain.
hal::ActivationGrain head_grain(const WeightStore& w) {
  for (const char* layer_weight : {"blk.0.ffn_up.weight", "blk.0.ffn_up_exps.weight"}) {
    const auto it = w.all().find(layer_weight);
    if (it != w.all().end())
      return bits_per_element(it->second.dtype) < 8 ? hal::ActivationGrain::k8Bit : hal::ActivationGrain::kWeight;
  }
  return hal::ActivationGrain::kWeight;
}

}  // namespace

std::string block_prefix(int layer) { return "blk." + std::to_string(layer) + "."; }

Result<BlockRank> load_block_rank(WeightStore& w, const ModelConfig& cfg, int layer, int rank, hal::Device& device,
                                  const LayerLoader& load_layer) {
  CAI_ASSIGN_OR_RETURN(DecoderLayers layers, load_layer(w, cfg, layer));
  std::visit([rank](auto& attn) { attn.set_kv_rank(rank); }, layers.attn);
  BlockRank b{&device, {}, {}, std::move(layers.attn), std::move(layers.ffn)};
  CAI_ASSIGN_OR_RETURN(b.attn_norm, w.get_f32(block_prefix(layer) + "attn_norm.weight", {cfg.hidden_size}));
  CAI_ASSIGN_OR_RETURN(b.ffn_norm, w.get_f32(block_prefix(layer) + "ffn_norm.weight", {cfg.hidden_size}));
  return b;
}

Result<ModelConfig> tensor_parallel_config(const ModelConfig& cfg, int tp, bool expert_parallel) {
  ModelConfig r = cfg;
  if (tp == 1) return r;
  auto split = [tp](int& n, const char* what) -> Status {
    if (n % tp) return invalid_argument("--tp {}: {} {} do not split over {} ranks", tp, n, what, tp);
    n /= tp;
    return {};
  };
  if (expert_parallel && r.n_routed_experts % tp)
    return invalid_argument("--ep {}: {} routed experts do not split over {} ranks", tp, r.n_routed_experts, tp);
  CAI_TRY(split(r.num_attention_heads, "attention heads"));
  if (!cfg.is_mla()) CAI_TRY(split(r.num_key_value_heads, "KV heads"));
  if (r.intermediate_size > 0) CAI_TRY(split(r.intermediate_size, "MLP intermediate columns"));
  if (r.n_routed_experts > 0 && !expert_parallel)
    CAI_TRY(split(r.moe_intermediate_size, "expert intermediate columns"));
  if (cfg.vocab_size % tp)
    return invalid_argument("--tp {}: a vocabulary of {} does not split over {} ranks", tp, cfg.vocab_size, tp);
  return r;
}

DecoderModel::DecoderModel(const ModelConfig& cfg, WeightStore weights, DeviceGroup group)
    : cfg_(cfg), weights_(std::move(weights)), group_(std::move(group)) {}

Result<std::unique_ptr<Model>> DecoderModel::build(const ModelConfig& cfg, WeightStore weights, DType kv_dtype,
                                                   const LayerLoader& load_layer) {
  CAI_ASSIGN_OR_RETURN(DeviceGroup group, DeviceGroup::create(weights.placement().devices()));
  std::unique_ptr<DecoderModel> m(new DecoderModel(cfg, std::move(weights), std::move(group)));
  if (m->weights_.placement().tp == 1)
    CAI_TRY(m->load_one_rank(kv_dtype, load_layer));
  else
    CAI_TRY(m->load_tensor_parallel(kv_dtype, load_layer));
  return std::unique_ptr<Model>(std::move(m));
}

Status DecoderModel::load_one_rank(DType kv_dtype, const LayerLoader& load_layer) {
  const int64_t hidden = cfg_.hidden_size, vocab = cfg_.vocab_size;
  const WeightPlacement& p = weights_.placement();
  const hal::ActivationGrain grain = head_grain(weights_);
  HeadRank head{&p.head(), {}, {}, 0, vocab};
  CAI_ASSIGN_OR_RETURN(head.norm, weights_.get_f32("output_norm.weight", {hidden}));
  if (weights_.has("output.weight")) {
    CAI_ASSIGN_OR_RETURN(tok_embd_, weights_.get("token_embd.weight", {vocab, hidden}));
    CAI_ASSIGN_OR_RETURN(head.output, weights_.get_gemm_weight("output.weight", {vocab, hidden}, grain));
  } else {  // tied embeddings: in the head's layout, which the device's embed op reads too (hal::Device)
    CAI_ASSIGN_OR_RETURN(head.output, weights_.get_gemm_weight("token_embd.weight", {vocab, hidden}, grain));
    tok_embd_ = head.output;
  }
  embed_device_ = p.embed;
  head_ = {head};
  kv_spec_ = kv_spec_for(cfg_, kv_dtype);
  for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
    CAI_ASSIGN_OR_RETURN(BlockRank b, load_block_rank(weights_, cfg_, l, 0, p.layer_device(l), load_layer));
    blocks_.emplace_back();
    blocks_.back().push_back(std::move(b));
    kv_shards_.push_back({{&p.layer_device(l), kv_spec_.k_width, kv_spec_.v_width}});
  }
  if (p.mtp_layers > 0) CAI_TRY(load_mtp(load_layer));
  return {};
}

// Each rank's store holds its slices of its stage's layers; the first stage's rank 0 also the whole embedding table,
// and every rank of the last stage the final norm and its vocabulary rows of the head (a tied model's from the
// embedding).
Status DecoderModel::load_tensor_parallel(DType kv_dtype, const LayerLoader& load_layer) {
  const WeightPlacement& p = weights_.placement();
  const int tp = p.tp, n_stages = static_cast<int>(p.stages.size());
  CAI_ASSIGN_OR_RETURN(const ModelConfig rank_cfg, tensor_parallel_config(cfg_, tp, p.expert_parallel));
  const bool tied = !weights_.holds_for_ranks("output.weight");  // before release_held() below
  for (int s = 0; s < n_stages; ++s) {
    for (int r = 0; r < tp; ++r) {
      std::vector<std::pair<std::string, std::string>> names;
      for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
        if (p.layer_stage[static_cast<size_t>(l)] != s) continue;
        const std::string prefix = block_prefix(l);
        for (const std::string& name : weights_.held_names(prefix)) names.emplace_back(name, name);
      }
      if (s == 0 && r == 0) names.emplace_back("token_embd.weight", "token_embd.weight");
      if (s + 1 == n_stages) {
        names.emplace_back("output_norm.weight", "output_norm.weight");
        names.emplace_back("output.weight", tied ? "token_embd.weight" : "output.weight");
        if (p.mtp_layers > 0)  // the module's block, norms and eh_proj, with the head's ranks
          for (const std::string& name : weights_.held_names(block_prefix(cfg_.num_hidden_layers)))
            names.emplace_back(name, name);
      }
      hal::Device& device = *p.stages[static_cast<size_t>(s)][static_cast<size_t>(r)];
      CAI_ASSIGN_OR_RETURN(WeightStore store, WeightStore::for_rank(weights_, names, r, tp, p.expert_parallel, device,
                                                                    cfg_.num_hidden_layers + p.mtp_layers));
      rank_stores_.push_back(std::move(store));
    }
  }
  weights_.release_held();  // the ranks' devices hold their slices now
  const int64_t hidden = cfg_.hidden_size, vocab = cfg_.vocab_size, rank_vocab = vocab / tp;
  embed_device_ = p.embed;
  CAI_ASSIGN_OR_RETURN(tok_embd_, rank_stores_.front().get("token_embd.weight", {vocab, hidden}));
  const hal::ActivationGrain grain = head_grain(rank_stores_.front());
  for (int r = 0; r < tp; ++r) {
    WeightStore& w = rank_stores_[static_cast<size_t>((n_stages - 1) * tp + r)];
    HeadRank head{&w.placement().head(), {}, {}, rank_vocab * r, rank_vocab};
    CAI_ASSIGN_OR_RETURN(head.norm, w.get_f32("output_norm.weight", {hidden}));
    CAI_ASSIGN_OR_RETURN(head.output, w.get_gemm_weight("output.weight", {rank_vocab, hidden}, grain));
    head_.push_back(head);
  }
  const KvSpec rank_kv = kv_spec_for(rank_cfg, kv_dtype);
  kv_spec_ = rank_kv;
  kv_spec_.k_width *= tp;
  kv_spec_.v_width *= tp;
  for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
    const int s = p.layer_stage[static_cast<size_t>(l)];
    blocks_.emplace_back();
    kv_shards_.emplace_back();
    for (int r = 0; r < tp; ++r) {
      WeightStore& w = rank_stores_[static_cast<size_t>(s * tp + r)];
      hal::Device& device = w.placement().head();
      CAI_ASSIGN_OR_RETURN(BlockRank b, load_block_rank(w, rank_cfg, l, r, device, load_layer));
      blocks_.back().push_back(std::move(b));
      kv_shards_.back().push_back({&device, rank_kv.k_width, rank_kv.v_width});
    }
  }
  if (p.mtp_layers > 0)
    for (int r = 0; r < tp; ++r) {
      WeightStore& w = rank_stores_[static_cast<size_t>((n_stages - 1) * tp + r)];
      CAI_TRY(load_mtp_rank(w, rank_cfg, r, w.placement().head(), load_layer));
    }
  return {};
}

std::vector<const WeightStore*> DecoderModel::stores() const {
  std::vector<const WeightStore*> out{&weights_};
  for (const WeightStore& w : rank_stores_) out.push_back(&w);
  return out;
}

size_t DecoderModel::weight_bytes() const {
  size_t n = 0;
  for (const WeightStore* w : stores()) n += w->total_bytes();
  return n;
}

size_t DecoderModel::weight_bytes_on(const hal::Device& device) const {
  size_t n = 0;
  for (const WeightStore* w : stores()) n += w->bytes_on(device);
  return n;
}

size_t DecoderModel::weight_bytes_per_token() const {
  const bool tied = head_.size() == 1 && head_.front().output.data == tok_embd_.data;
  size_t bytes = weight_bytes() - (tied ? 0 : tok_embd_.n_bytes());
  if (cfg_.n_routed_experts > 0) {  // one token reads only its top-k routed experts
    const double unread = 1.0 - static_cast<double>(cfg_.num_experts_per_tok) / cfg_.n_routed_experts;
    size_t experts = 0;
    for (const WeightStore* w : stores()) experts += w->bytes_matching("_exps.");
    bytes -= static_cast<size_t>(unread * static_cast<double>(experts));
  }
  return bytes;
}

size_t DecoderModel::prewarm_experts() const {
  size_t n = 0;
  for (const WeightStore* w : stores()) n += w->prewarm("_exps.");
  return n;
}

Status DecoderModel::lock_weights() const {
  for (const WeightStore* w : stores()) CAI_TRY(w->lock_in_memory());
  return {};
}

Status DecoderModel::upload_step(const StepBatch& batch, const KvCache& kv) {
  const int64_t n = static_cast<int64_t>(batch.tokens.size()), m = static_cast<int64_t>(batch.logit_rows.size());
  const int64_t n_seqs = static_cast<int64_t>(batch.seqs.size()), bs = kv.block_size();
  if (batch.positions.size() != batch.tokens.size() || batch.slots.size() != batch.tokens.size())
    return invalid_argument("forward: {} tokens, {} positions, {} slots", n, batch.positions.size(),
                            batch.slots.size());
  for (int32_t t : batch.tokens)
    if (t < 0 || t >= cfg_.vocab_size)
      return invalid_argument("forward: token id {} outside vocab of {}", t, cfg_.vocab_size);
  for (int32_t s : batch.slots)
    if (s < 0 || s >= kv.n_slots()) return invalid_argument("forward: KV slot {} outside {}", s, kv.n_slots());
  for (int32_t r : batch.logit_rows)
    if (r < 0 || r >= n) return invalid_argument("forward: logit row {} outside {} tokens", r, n);
  int32_t max_q = 0, max_ctx = 0;
  for (const hal::AttnSeq& s : batch.seqs) {
    if (s.n_q < 0 || s.pos0 < 0 || s.q_begin < 0 || s.q_begin + s.n_q > n || !s.block_table)
      return invalid_argument("forward: sequence rows [{}, +{}) at {} do not fit {} tokens", s.q_begin, s.n_q, s.pos0,
                              n);
    max_q = std::max(max_q, s.n_q);
    max_ctx = std::max(max_ctx, s.pos0 + s.n_q);
  }
  const int64_t max_blocks = std::max<int64_t>(1, (max_ctx + bs - 1) / bs);
  // Layout (I32): tokens | positions | slots | logit_rows | seqs [n_seqs, 3] | block_tables [n_seqs, max_blocks].
  step_meta_.assign(static_cast<size_t>(3 * n + m + n_seqs * (3 + max_blocks)), 0);
  int32_t* p = step_meta_.data();
  p = std::copy(batch.tokens.begin(), batch.tokens.end(), p);
  p = std::copy(batch.positions.begin(), batch.positions.end(), p);
  p = std::copy(batch.slots.begin(), batch.slots.end(), p);
  p = std::copy(batch.logit_rows.begin(), batch.logit_rows.end(), p);
  for (const hal::AttnSeq& s : batch.seqs) *p++ = s.q_begin, *p++ = s.n_q, *p++ = s.pos0;
  for (const hal::AttnSeq& s : batch.seqs) {
    const int64_t used = (s.pos0 + s.n_q + bs - 1) / bs;
    for (int64_t b = 0; b < used; ++b) {
      if (s.block_table[b] < 0 || s.block_table[b] >= kv.n_blocks())
        return invalid_argument("forward: KV block {} outside {}", s.block_table[b], kv.n_blocks());
      p[b] = s.block_table[b];
    }
    p += max_blocks;
  }
  const std::vector<hal::Device*>& devices = group_.devices();
  step_.assign(devices.size(), StepTensors{});
  for (size_t r = 0; r < devices.size(); ++r) {
    hal::Device& d = *devices[r];
    CAI_ASSIGN_OR_RETURN(TensorView meta,
                         group_.ws(d).get("step.meta", DType::kI32, {static_cast<int64_t>(step_meta_.size())}));
    CAI_TRY(d.default_stream().copy_to_device(meta.data, step_meta_.data(), step_meta_.size() * sizeof(int32_t)));
    int32_t* base = meta.as<int32_t>();
    auto view = [&](int64_t offset, std::initializer_list<int64_t> shape) {
      TensorView v = TensorView::make(base + offset, DType::kI32, shape);
      v.device = &d;
      return v;
    };
    StepTensors& st = step_[r];
    st.tokens = view(0, {n});
    st.positions = view(n, {n});
    st.slots = view(2 * n, {n});
    st.logit_rows = view(3 * n, {m});
    st.attn.seqs = view(3 * n + m, {n_seqs, 3});
    st.attn.block_tables = view(3 * n + m + 3 * n_seqs, {n_seqs, max_blocks});
    st.attn.max_q = max_q;
    st.attn.max_ctx = max_ctx;
  }
  return {};
}

const StepTensors& DecoderModel::step_on(const hal::Device& d) const {
  const auto& devices = group_.devices();
  const size_t r = static_cast<size_t>(std::find(devices.begin(), devices.end(), &d) - devices.begin());
  CAI_CHECK(r < step_.size() && step_[r].tokens.device == &d, "no step metadata on {}", d.name());
  return step_[r];
}

Result<std::vector<TensorView>> DecoderModel::residual_on(std::vector<TensorView> xs,
                                                          const std::vector<hal::Device*>& ranks) {
  bool same = xs.size() == ranks.size();
  for (size_t r = 0; same && r < ranks.size(); ++r) same = xs[r].device == ranks[r];
  if (same) return xs;
  if (xs.size() == 1 && ranks.size() > 1) return group_.broadcast(xs.front(), ranks, "x");
  // Every rank of a stage holds the same stream (the all-reduce gives each the same bits): where the next stage has as
  // many ranks, rank r's goes to its rank r, so the transfers leave from every device at once instead of all from one.
  std::vector<TensorView> moved;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const TensorView& from = xs.size() == ranks.size() ? xs[r] : xs.front();
    CAI_ASSIGN_OR_RETURN(TensorView x, group_.move_to(from, *ranks[r], "x"));
    moved.push_back(x);
  }
  return moved;
}

// norm → attention → all-reduce → residual, norm → FFN → all-reduce → residual, each rank on its device.
Status DecoderModel::run_block(const std::vector<BlockRank>& block, int layer, std::vector<TensorView>& xs,
                               KvCache& kv) {
  const int64_t n = xs.front().rows(), hidden = cfg_.hidden_size;
  std::vector<TensorView> hs, ys;
  for (const BlockRank& b : block) {
    CAI_ASSIGN_OR_RETURN(TensorView h, group_.ws(*b.device).f32("h", {n, hidden}));
    CAI_ASSIGN_OR_RETURN(TensorView y, group_.ws(*b.device).f32("y", {n, hidden}));
    hs.push_back(h);
    ys.push_back(y);
  }
  for (size_t r = 0; r < block.size(); ++r) {
    const BlockRank& b = block[r];
    hal::Device& d = *b.device;
    {
      profile::Scope scope("norm_residual");
      CAI_TRY(ops::rms_norm(d, xs[r], b.attn_norm, cfg_.rms_norm_eps, hs[r]));
    }
    KvHostTier* host_kv = kv.host_tier(layer, static_cast<int>(r));
    if (host_kv) {
      profile::Scope scope("kv_offload");
      CAI_TRY(host_kv->stage_in(layer));
    }
    const StepTensors& step = step_on(d);
    CAI_TRY(std::visit([&](const auto& attn) { return attn.forward(d, group_.ws(d), step, hs[r], kv, ys[r]); },
                       b.attn));  // profiled inside
    if (host_kv) {
      profile::Scope scope("kv_offload");
      CAI_TRY(host_kv->keep_new_rows(layer, step.slots));
    }
  }
  CAI_TRY(group_.all_reduce(ys));
  for (size_t r = 0; r < block.size(); ++r) {
    const BlockRank& b = block[r];
    hal::Device& d = *b.device;
    {
      profile::Scope scope("norm_residual");
      CAI_TRY(ops::add(d, xs[r], ys[r], xs[r]));
      CAI_TRY(ops::rms_norm(d, xs[r], b.ffn_norm, cfg_.rms_norm_eps, hs[r]));
    }
    if (const MoeFfn* moe = std::get_if<MoeFfn>(&b.ffn))  // profiled inside
      CAI_TRY(moe->forward(d, group_, hs[r], ys[r]));
    else
      CAI_TRY(std::get<DenseMlp>(b.ffn).forward(d, group_.ws(d), hs[r], ys[r]));
  }
  CAI_TRY(group_.all_reduce(ys));
  profile::Scope scope("norm_residual");
  for (size_t r = 0; r < block.size(); ++r) CAI_TRY(ops::add(*block[r].device, xs[r], ys[r], xs[r]));
  return {};
}

// Each head rank's vocabulary rows of the logits, read back into their columns of `logits`.
Status DecoderModel::run_head(const StepBatch& batch, std::vector<TensorView> xs, float* logits) {
  CAI_ASSIGN_OR_RETURN(xs, residual_on(std::move(xs), weights_.placement().stages.back()));  // the head's ranks
  profile::Scope scope("lm_head");
  const int64_t m = static_cast<int64_t>(batch.logit_rows.size());
  for (size_t r = 0; r < head_.size(); ++r) CAI_TRY(head_logits(r, xs[r], head_[r].norm, m, logits, nullptr));
  return {};
}

Status DecoderModel::head_logits(size_t r, const TensorView& x, const TensorView& norm, int64_t m, float* logits,
                                 float* rows) {
  const HeadRank& h = head_[r];
  hal::Device& d = *h.device;
  hal::Device& reader = *weights_.placement().stages.front().front();
  Workspace& ws = group_.ws(d);
  CAI_ASSIGN_OR_RETURN(TensorView sel, ws.f32("sel", {m, cfg_.hidden_size}));
  CAI_ASSIGN_OR_RETURN(TensorView seln, ws.f32("sel_norm", {m, cfg_.hidden_size}));
  CAI_ASSIGN_OR_RETURN(TensorView out, ws.f32("logits", {m, h.n_vocab}));
  CAI_TRY(ops::embed(d, x, step_on(d).logit_rows, sel));  // gather the rows that need logits
  CAI_TRY(ops::rms_norm(d, sel, norm, cfg_.rms_norm_eps, seln));
  CAI_TRY(ops::dense_gemm(d, h.output, seln, nullptr, out));
  if (rows && r == 0 && !hal::is_remote(d)) CAI_TRY(d.default_stream().copy_to_host(rows, sel.data, sel.n_bytes()));
  if (&d != &reader && (hal::is_remote(d) || hal::is_remote(reader))) {
    CAI_ASSIGN_OR_RETURN(out, group_.move_to(out, reader, "logits_in"));
  }
  if (hal::is_remote(*out.device)) return {};  // another process reads these logits
  return read_head_logits(h, out, m, logits);
}

Status DecoderModel::read_head_logits(const HeadRank& h, const TensorView& out, int64_t m, float* logits) {
  hal::Stream& stream = out.device->default_stream();
  if (head_.size() == 1) return stream.copy_to_host(logits, out.data, out.n_bytes());
  logits_part_.resize(static_cast<size_t>(m * h.n_vocab));
  CAI_TRY(stream.copy_to_host(logits_part_.data(), out.data, out.n_bytes()));
  for (int64_t i = 0; i < m; ++i)
    std::copy_n(logits_part_.data() + i * h.n_vocab, h.n_vocab, logits + i * cfg_.vocab_size + h.vocab_begin);
  return {};
}

Status DecoderModel::read_final_hidden(const std::vector<TensorView>& xs, float* hidden) {
  const HeadRank& h = head_.front();
  hal::Device& d = *h.device;
  if (hal::is_remote(d)) return unsupported("the final hidden states stay with the process that runs {}", d.name());
  CAI_ASSIGN_OR_RETURN(TensorView out, group_.ws(d).f32("final_hidden", {xs.front().rows(), cfg_.hidden_size}));
  CAI_TRY(ops::rms_norm(d, xs.front(), h.norm, cfg_.rms_norm_eps, out));
  return d.default_stream().copy_to_host(hidden, out.data, out.n_bytes());
}

Status DecoderModel::forward(const StepBatch& batch, KvCache& kv, float* logits, float* final_hidden) {
  const int64_t n = static_cast<int64_t>(batch.tokens.size()), hidden = cfg_.hidden_size;
  if (n == 0) return invalid_argument("forward: empty batch");
  CAI_TRY(upload_step(batch, kv));
  CAI_ASSIGN_OR_RETURN(TensorView x, group_.ws(*embed_device_).f32("x", {n, hidden}));
  {
    profile::Scope scope("embed");
    CAI_TRY(ops::embed(*embed_device_, tok_embd_, step_on(*embed_device_).tokens, x));
  }
  std::vector<TensorView> xs{x};
  for (const auto& tier : kv.host_tiers()) CAI_TRY(tier->begin_step(batch));
  for (size_t layer = 0; layer < blocks_.size(); ++layer) {
    CAI_ASSIGN_OR_RETURN(xs, residual_on(std::move(xs), weights_.placement().layer_ranks(static_cast<int>(layer))));
    CAI_TRY(run_block(blocks_[layer], static_cast<int>(layer), xs, kv));
  }
  if (!kv.host_tiers().empty()) {
    profile::Scope scope("kv_offload");
    for (const auto& tier : kv.host_tiers()) CAI_TRY(tier->end_step());
  }
  if (final_hidden) {
    CAI_ASSIGN_OR_RETURN(xs, residual_on(std::move(xs), weights_.placement().stages.back()));
    CAI_TRY(read_final_hidden(xs, final_hidden));
  }
  if (batch.logit_rows.empty()) return {};
  return run_head(batch, std::move(xs), logits);
}

}  // namespace cai
