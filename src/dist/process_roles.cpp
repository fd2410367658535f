// LeaderModel, the worker loop and the start-up check that all ranks run the same model.
#include "dist/process_roles.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <functional>
#include <span>
#include <thread>

#include "core/log.h"
#include "dist/step_message.h"

namespace cai::dist {

namespace {

// The step broadcast and the stop message wait at most this long on the leader; a worker waits for the next step
// without a deadline (the leader may be idle for hours).
constexpr double kStopTimeoutS = 5.0;

// Broadcasts a step (its header, the batch's integers, then `floats`) from the leader; a failure breaks the group.
Status broadcast_step(hal::ProcessGroup& group, StepKind kind, const StepBatch& batch, const KvCache& kv,
                      std::span<const float> floats) {
  const std::string failure = hal::group_failure();
  if (!failure.empty()) return unavailable("the process group has failed: {}", failure);
  std::vector<int32_t> ints = encode_step(batch, kv.block_size());
  StepHeader h{static_cast<int64_t>(kind),
               static_cast<int64_t>(ints.size()),
               kv.n_blocks(),
               kv.block_size(),
               kv.host_request().n_layers,
               kv.host_request().max_step_tokens,
               static_cast<int64_t>(floats.size())};
  const double timeout = hal::collective_timeout();
  if (!group.broadcast(&h, sizeof h, 0, timeout) ||
      !group.broadcast(ints.data(), ints.size() * sizeof(int32_t), 0, timeout) ||
      (!floats.empty() &&
       !group.broadcast(const_cast<float*>(floats.data()), floats.size() * sizeof(float), 0, timeout))) {
    hal::set_group_failure(group.error());
    return unavailable("{}", group.error());
  }
  return {};
}

// The leader's MTP module: each of its steps goes to the workers, with the hidden states, before it runs here.
class LeaderMtp final : public MtpModule {
 public:
  LeaderMtp(MtpModule& inner, int64_t hidden_size, hal::ProcessGroup& group, std::function<Status(Status)> on_failure)
      : inner_(inner), hidden_size_(hidden_size), group_(group), on_failure_(std::move(on_failure)) {}
  KvSpec mtp_kv_spec() const override { return inner_.mtp_kv_spec(); }
  std::vector<std::vector<KvShard>> mtp_kv_shards() const override { return inner_.mtp_kv_shards(); }
  Status forward_mtp(const StepBatch& batch, const float* hidden, KvCache& kv, float* logits,
                     float* block_out) override {
    const size_t n = batch.tokens.size() * static_cast<size_t>(hidden_size_);
    Status st = broadcast_step(group_, StepKind::kMtp, batch, kv, std::span<const float>(hidden, n));
    if (st.ok()) st = inner_.forward_mtp(batch, hidden, kv, logits, block_out);
    return on_failure_(std::move(st));
  }

 private:
  MtpModule& inner_;
  int64_t hidden_size_;
  hal::ProcessGroup& group_;
  std::function<Status(Status)> on_failure_;
};

class LeaderModel final : public Model {
 public:
  LeaderModel(std::unique_ptr<Model> inner, hal::ProcessGroup& group) : inner_(std::move(inner)), group_(group) {
    if (MtpModule* m = inner_->mtp())
      mtp_ = std::make_unique<LeaderMtp>(*m, inner_->config().hidden_size, group_,
                                         [this](Status st) { return after(std::move(st)); });
  }
  ~LeaderModel() override {
    if (!hal::group_failure().empty()) return;
    StepHeader stop;
    stop.kind = static_cast<int64_t>(StepKind::kStop);
    if (!group_.broadcast(&stop, sizeof stop, 0, kStopTimeoutS))
      CAI_LOG_WARN("telling the workers to stop: {}", group_.error());
  }

  const ModelConfig& config() const override { return inner_->config(); }
  KvSpec kv_spec() const override { return inner_->kv_spec(); }
  hal::Device& device() const override { return inner_->device(); }
  std::vector<hal::Device*> devices() const override { return inner_->devices(); }
  std::vector<std::vector<KvShard>> kv_shards() const override { return inner_->kv_shards(); }
  const hal::Communicator* communicator() const override { return inner_->communicator(); }
  size_t weight_bytes() const override { return inner_->weight_bytes(); }
  size_t weight_bytes_on(const hal::Device& d) const override { return inner_->weight_bytes_on(d); }
  size_t weight_bytes_per_token() const override { return inner_->weight_bytes_per_token(); }
  size_t prewarm_experts() const override { return inner_->prewarm_experts(); }
  Status lock_weights() const override { return inner_->lock_weights(); }

  Status forward(const StepBatch& batch, KvCache& kv, float* logits, float* hidden) override {
    Status st = broadcast_step(group_, StepKind::kStep, batch, kv, {});
    if (st.ok()) st = inner_->forward(batch, kv, logits, hidden);
    return after(std::move(st));
  }
  MtpModule* mtp() override { return mtp_.get(); }

 private:
  // A step's status; once the group has failed, rank_failed, and the job ends soon.
  Status after(Status st) {
    const std::string failure = hal::group_failure();
    if (!st.ok() && !failure.empty()) {
      abort_soon(failure);
      return unavailable("rank failed: {}", failure);
    }
    return st;
  }

  void abort_soon(const std::string& failure) {
    if (aborting_) return;
    aborting_ = true;
    CAI_LOG_ERROR("the process group failed ({}); ending the job in 2 s so that it can be restarted", failure);
    hal::ProcessGroup* group = &group_;
    std::thread([group] {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      std::fflush(stdout);
      std::fflush(stderr);
      group->abort(3);
    }).detach();
  }

  std::unique_ptr<Model> inner_;
  hal::ProcessGroup& group_;
  std::unique_ptr<LeaderMtp> mtp_;
  bool aborting_ = false;
};

// What must agree between the ranks, as integers.
std::vector<int64_t> fingerprint(Model& m) {
  const ModelConfig& c = m.config();
  const KvSpec kv = m.kv_spec();
  return {c.num_hidden_layers,
          c.hidden_size,
          c.vocab_size,
          kv.n_layers,
          kv.k_width,
          kv.v_width,
          static_cast<int64_t>(kv.dtype),
          static_cast<int64_t>(m.devices().size()),
          m.mtp() != nullptr};
}

}  // namespace

bool is_worker() {
  const hal::ProcessGroup* g = hal::process_group();
  return g && g->rank() > 0;
}

Status check_same_model(Model& model, hal::ProcessGroup& group) {
  static const char* kWhat[] = {"layers",  "hidden size", "vocabulary", "KV layers",    "K width",
                                "V width", "KV dtype",    "devices",    "an MTP module"};
  const std::vector<int64_t> mine = fingerprint(model);
  std::vector<int64_t> all(mine.size() * static_cast<size_t>(group.size()));
  if (!group.all_gather(mine.data(), all.data(), mine.size() * sizeof(int64_t), hal::every_rank(group),
                        hal::startup_timeout()))
    return unavailable("comparing the ranks' models: {}", group.error());
  for (int r = 1; r < group.size(); ++r)
    for (size_t i = 0; i < mine.size(); ++i) {
      const int64_t theirs = all[static_cast<size_t>(r) * mine.size() + i];
      if (theirs != all[i])
        return invalid_argument(
            "rank {} loaded a different model or layout than rank 0: {} {} there, {} on rank 0 "
            "(give every rank the same model, --device count, layout and --kv-dtype)",
            r, kWhat[i], theirs, all[i]);
    }
  return {};
}

std::unique_ptr<Model> make_leader_model(std::unique_ptr<Model> model, hal::ProcessGroup& group) {
  return std::make_unique<LeaderModel>(std::move(model), group);
}

namespace {

// `cache` with the header's shape over `shards`, made anew where it has another one.
Status ensure_cache(std::unique_ptr<KvCache>& cache, const std::vector<std::vector<KvShard>>& shards,
                    const KvSpec& spec, const StepHeader& h) {
  if (cache && cache->n_blocks() == h.kv_blocks && cache->block_size() == h.kv_block_size &&
      cache->host_request().n_layers == h.kv_host_layers)
    return {};
  const KvHostLayers host{static_cast<int>(h.kv_host_layers), static_cast<int>(h.kv_step_tokens)};
  CAI_ASSIGN_OR_RETURN(KvCache made, KvCache::create(shards, spec, static_cast<int>(h.kv_blocks),
                                                     static_cast<int>(h.kv_block_size), host));
  cache = std::make_unique<KvCache>(std::move(made));
  if (!cache->host_layers().empty()) CAI_LOG_INFO("KV offload: {}", describe_host_tier(*cache));
  return {};
}

// Receives the rest of a step whose header came, and runs it: the model's step, or its MTP module's. `logits` is the
// worker's buffer for the logits it computes and nobody reads, kept between steps.
Status run_step(Model& model, hal::ProcessGroup& group, const StepHeader& h, std::unique_ptr<KvCache>& kv,
                std::unique_ptr<KvCache>& mtp_kv, std::vector<float>& logits) {
  std::vector<int32_t> ints(static_cast<size_t>(h.n_ints));
  std::vector<float> floats(static_cast<size_t>(h.n_floats));
  if (!group.broadcast(ints.data(), ints.size() * sizeof(int32_t), 0, hal::collective_timeout()) ||
      (!floats.empty() && !group.broadcast(floats.data(), floats.size() * sizeof(float), 0, hal::collective_timeout())))
    return unavailable("receiving a step: {}", group.error());
  CAI_ASSIGN_OR_RETURN(const DecodedStep step, decode_step(ints, static_cast<int>(h.kv_block_size)));
  logits.resize(step.batch.logit_rows.size() * static_cast<size_t>(model.config().vocab_size));
  if (h.kind == static_cast<int64_t>(StepKind::kStep)) {
    CAI_TRY(ensure_cache(kv, model.kv_shards(), model.kv_spec(), h));
    return model.forward(step.batch, *kv, logits.data());
  }
  MtpModule* mtp = model.mtp();
  if (h.kind != static_cast<int64_t>(StepKind::kMtp) || !mtp) return corrupt("a step of unknown kind {}", h.kind);
  if (floats.size() != step.batch.tokens.size() * static_cast<size_t>(model.config().hidden_size))
    return corrupt("an MTP step with {} hidden values for {} tokens", floats.size(), step.batch.tokens.size());
  CAI_TRY(ensure_cache(mtp_kv, mtp->mtp_kv_shards(), mtp->mtp_kv_spec(), h));
  return mtp->forward_mtp(step.batch, floats.data(), *mtp_kv, logits.data(), nullptr);
}

}  // namespace

void run_worker(Model& model, hal::ProcessGroup& group) {
  CAI_LOG_INFO("worker of {} ranks on {} (pid {}): waiting for the leader's steps", group.size(), group.host(),
               getpid());
  // mpirun forwards a stop to every rank: the leader ends the job (its stop message), a worker goes on until then.
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);
  std::unique_ptr<KvCache> kv, mtp_kv;
  std::vector<float> logits;
  Status st;
  for (;;) {
    StepHeader h;
    if (!group.broadcast(&h, sizeof h, 0, -1)) {
      st = unavailable("waiting for the leader: {}", group.error());
      break;
    }
    if (h.kind == static_cast<int64_t>(StepKind::kStop)) break;
    st = run_step(model, group, h, kv, mtp_kv, logits);
    if (!st.ok()) break;
  }
  std::fflush(stdout);
  if (st.ok()) {
    CAI_LOG_INFO("the leader stopped the job");
    std::fflush(stderr);
    hal::leave_process_group();
    std::_Exit(0);
  }
  CAI_LOG_ERROR("worker rank {}: {}; ending the job", group.rank(), st.to_string());
  std::fflush(stderr);
  group.abort(4);
  std::_Exit(4);  // abort() ends the job; should it come back, this rank still ends
}

}  // namespace cai::dist
