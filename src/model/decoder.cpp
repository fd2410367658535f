// DecoderModel: loading of the shared parts and the forward pass over a StepBatch.
#include "model/decoder.h"

#include <algorithm>

#include "core/profile.h"
#include "ops/ops.h"

namespace cai {

DecoderModel::DecoderModel(const ModelConfig& cfg, WeightStore weights, const KvSpec& kv_spec, DeviceGroup group)
    : cfg_(cfg), weights_(std::move(weights)), kv_spec_(kv_spec), group_(std::move(group)) {}

Result<std::unique_ptr<DecoderModel>> DecoderModel::create(const ModelConfig& cfg, WeightStore weights,
                                                           const KvSpec& kv_spec) {
  CAI_ASSIGN_OR_RETURN(DeviceGroup group, DeviceGroup::create(weights.placement().devices()));
  return std::unique_ptr<DecoderModel>(new DecoderModel(cfg, std::move(weights), kv_spec, std::move(group)));
}

namespace {

// The activations the output head multiplies on a fast path may be 8-bit whatever its weight type when the layers'
// weights are coarser than 8 bits (4- to 6-bit layers beside a Q8_0 head, as llama.cpp writes Qwen2-0.5B's tied
// embedding): their own rounding then dwarfs what 8-bit activations add. TinyStories-656K with Q4_0 layers and a Q8_0
// head, 1,022 teacher-forced tokens against the F16 file's logits: mean KL 0.0656 nats exact, 0.0659 fast with 16-bit
// head activations, 0.0660 with 8-bit (README, "--precision"). Otherwise (8-bit or wider layers) the weight's own grain.
hal::ActivationGrain head_grain(const WeightStore& w) {
  for (const char* layer_weight : {"blk.0.ffn_up.weight", "blk.0.ffn_up_exps.weight"}) {
    const auto it = w.all().find(layer_weight);
    if (it != w.all().end())
      return bits_per_element(it->second.dtype) < 8 ? hal::ActivationGrain::k8Bit : hal::ActivationGrain::kWeight;
  }
  return hal::ActivationGrain::kWeight;
}

}  // namespace

Status DecoderModel::load_embeddings_and_head() {
  const int64_t hidden = cfg_.hidden_size, vocab = cfg_.vocab_size;
  const hal::ActivationGrain grain = head_grain(weights_);
  CAI_ASSIGN_OR_RETURN(out_norm_, weights_.get_f32("output_norm.weight", {hidden}));
  if (weights_.has("output.weight")) {
    CAI_ASSIGN_OR_RETURN(tok_embd_, weights_.get("token_embd.weight", {vocab, hidden}));
    CAI_ASSIGN_OR_RETURN(output_, weights_.get_gemm_weight("output.weight", {vocab, hidden}, grain));
  } else {  // tied embeddings: in the head's layout, which the device's embed op reads too (hal::Device)
    CAI_ASSIGN_OR_RETURN(output_, weights_.get_gemm_weight("token_embd.weight", {vocab, hidden}, grain));
    tok_embd_ = output_;
  }
  return {};
}

Status DecoderModel::add_block(int layer, std::variant<AttentionGqa, AttentionMla> attn, std::variant<DenseMlp, MoeFfn> ffn) {
  const std::string p = "blk." + std::to_string(layer) + ".";
  CAI_ASSIGN_OR_RETURN(TensorView an, weights_.get_f32(p + "attn_norm.weight", {cfg_.hidden_size}));
  CAI_ASSIGN_OR_RETURN(TensorView fn, weights_.get_f32(p + "ffn_norm.weight", {cfg_.hidden_size}));
  blocks_.push_back({&weights_.placement().layer_device(layer), an, fn, std::move(attn), std::move(ffn)});
  return {};
}

size_t DecoderModel::weight_bytes_per_token() const {
  size_t bytes = weights_.total_bytes() - (output_.data == tok_embd_.data ? 0 : tok_embd_.n_bytes());
  if (cfg_.n_routed_experts > 0) {  // one token reads only its top-k routed experts
    const double unread = 1.0 - static_cast<double>(cfg_.num_experts_per_tok) / cfg_.n_routed_experts;
    bytes -= static_cast<size_t>(unread * static_cast<double>(weights_.bytes_matching("_exps.")));
  }
  return bytes;
}

Status DecoderModel::upload_step(const StepBatch& batch, const KvCache& kv) {
  const int64_t n = static_cast<int64_t>(batch.tokens.size()), m = static_cast<int64_t>(batch.logit_rows.size());
  const int64_t n_seqs = static_cast<int64_t>(batch.seqs.size()), bs = kv.block_size();
  if (batch.positions.size() != batch.tokens.size() || batch.slots.size() != batch.tokens.size())
    return invalid_argument("forward: {} tokens, {} positions, {} slots", n, batch.positions.size(), batch.slots.size());
  for (int32_t t : batch.tokens)
    if (t < 0 || t >= cfg_.vocab_size) return invalid_argument("forward: token id {} outside vocab of {}", t, cfg_.vocab_size);
  for (int32_t s : batch.slots)
    if (s < 0 || s >= kv.n_slots()) return invalid_argument("forward: KV slot {} outside {}", s, kv.n_slots());
  for (int32_t r : batch.logit_rows)
    if (r < 0 || r >= n) return invalid_argument("forward: logit row {} outside {} tokens", r, n);
  int32_t max_q = 0, max_ctx = 0;
  for (const hal::AttnSeq& s : batch.seqs) {
    if (s.n_q < 0 || s.pos0 < 0 || s.q_begin < 0 || s.q_begin + s.n_q > n || !s.block_table)
      return invalid_argument("forward: sequence rows [{}, +{}) at {} do not fit {} tokens", s.q_begin, s.n_q, s.pos0, n);
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
    const bool runs_layers = std::any_of(blocks_.begin(), blocks_.end(), [&](const DecoderBlock& b) { return b.device == &d; });
    if (!runs_layers && &d != weights_.placement().embed && &d != weights_.placement().head) continue;
    CAI_ASSIGN_OR_RETURN(TensorView meta, group_.ws(d).get("step.meta", DType::kI32, {static_cast<int64_t>(step_meta_.size())}));
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

Status DecoderModel::forward(const StepBatch& batch, KvCache& kv, float* logits) {
  const int64_t n = static_cast<int64_t>(batch.tokens.size()), hidden = cfg_.hidden_size;
  const int64_t m = static_cast<int64_t>(batch.logit_rows.size());
  if (n == 0) return invalid_argument("forward: empty batch");
  CAI_TRY(upload_step(batch, kv));
  hal::Device* dev = weights_.placement().embed;
  CAI_ASSIGN_OR_RETURN(TensorView x, group_.ws(*dev).f32("x", {n, hidden}));
  {
    profile::Scope scope("embed");
    CAI_TRY(ops::embed(*dev, tok_embd_, step_on(*dev).tokens, x));
  }
  KvHostTier* host_kv = kv.host_tier();
  if (host_kv) CAI_TRY(host_kv->begin_step(batch));
  for (size_t layer = 0; layer < blocks_.size(); ++layer) {
    const DecoderBlock& b = blocks_[layer];
    if (b.device != dev) {  // a stage boundary: the residual stream moves on
      dev = b.device;
      CAI_ASSIGN_OR_RETURN(x, group_.move_to(x, *dev, "x"));
    }
    hal::Device& d = *dev;
    Workspace& ws = group_.ws(d);
    const StepTensors& step = step_on(d);
    CAI_ASSIGN_OR_RETURN(TensorView h, ws.f32("h", {n, hidden}));
    CAI_ASSIGN_OR_RETURN(TensorView y, ws.f32("y", {n, hidden}));
    const bool on_host = host_kv && host_kv->holds(static_cast<int>(layer));
    {
      profile::Scope scope("norm_residual");
      CAI_TRY(ops::rms_norm(d, x, b.attn_norm, cfg_.rms_norm_eps, h));
    }
    if (on_host) {
      profile::Scope scope("kv_offload");
      CAI_TRY(host_kv->stage_in(static_cast<int>(layer)));
    }
    CAI_TRY(std::visit([&](const auto& attn) { return attn.forward(d, ws, step, h, kv, y); }, b.attn));  // profiled inside
    if (on_host) {
      profile::Scope scope("kv_offload");
      CAI_TRY(host_kv->keep_new_rows(static_cast<int>(layer), step.slots));
    }
    {
      profile::Scope scope("norm_residual");
      CAI_TRY(ops::add(d, x, y, x));
      CAI_TRY(ops::rms_norm(d, x, b.ffn_norm, cfg_.rms_norm_eps, h));
    }
    if (const MoeFfn* moe = std::get_if<MoeFfn>(&b.ffn))  // profiled inside
      CAI_TRY(moe->forward(d, group_, h, y));
    else
      CAI_TRY(std::get<DenseMlp>(b.ffn).forward(d, ws, h, y));
    profile::Scope scope("norm_residual");
    CAI_TRY(ops::add(d, x, y, x));
  }
  if (host_kv) {
    profile::Scope scope("kv_offload");
    CAI_TRY(host_kv->end_step());
  }
  if (m == 0) return {};
  if (dev != weights_.placement().head) {
    dev = weights_.placement().head;
    CAI_ASSIGN_OR_RETURN(x, group_.move_to(x, *dev, "x"));
  }
  hal::Device& d = *dev;
  Workspace& ws = group_.ws(d);
  profile::Scope scope("lm_head");
  CAI_ASSIGN_OR_RETURN(TensorView sel, ws.f32("sel", {m, hidden}));
  CAI_ASSIGN_OR_RETURN(TensorView seln, ws.f32("sel_norm", {m, hidden}));
  CAI_ASSIGN_OR_RETURN(TensorView out, ws.f32("logits", {m, static_cast<int64_t>(cfg_.vocab_size)}));
  CAI_TRY(ops::embed(d, x, step_on(d).logit_rows, sel));  // gather the rows that need logits
  CAI_TRY(ops::rms_norm(d, sel, out_norm_, cfg_.rms_norm_eps, seln));
  CAI_TRY(ops::dense_gemm(d, output_, seln, nullptr, out));
  return d.default_stream().copy_to_host(logits, out.data, out.n_bytes());
}

}  // namespace cai
