// LeaderModel, the worker loop and the start-up check that all ranks run the same model.
#include "dist/process_roles.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <thread>

#include "core/log.h"
#include "dist/step_message.h"

namespace cai::dist {

namespace {

// The step broadcast and the stop message wait at most this long on the leader; a worker waits for the next step
// without a deadline (the leader may be idle for hours).
constexpr double kStopTimeoutS = 5.0;

class LeaderModel final : public Model {
 public:
  LeaderModel(std::unique_ptr<Model> inner, hal::ProcessGroup& group) : inner_(std::move(inner)), group_(group) {}
  ~LeaderModel() override {
    if (!hal::group_failure().empty()) return;
    StepHeader stop{static_cast<int64_t>(StepKind::kStop), 0, 0, 0, 0, 0};
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
    Status st = broadcast(batch, kv);
    if (st.ok()) st = inner_->forward(batch, kv, logits, hidden);
    const std::string failure = hal::group_failure();
    if (!st.ok() && !failure.empty()) {
      abort_soon(failure);
      return unavailable("rank failed: {}", failure);
    }
    return st;
  }

 private:
  Status broadcast(const StepBatch& batch, const KvCache& kv) {
    const std::string failure = hal::group_failure();
    if (!failure.empty()) return unavailable("the process group has failed: {}", failure);
    std::vector<int32_t> ints = encode_step(batch, kv.block_size());
    StepHeader h{static_cast<int64_t>(StepKind::kStep),
                 static_cast<int64_t>(ints.size()),
                 kv.n_blocks(),
                 kv.block_size(),
                 kv.host_request().n_layers,
                 kv.host_request().max_step_tokens};
    const double timeout = hal::collective_timeout();
    if (!group_.broadcast(&h, sizeof h, 0, timeout) ||
        !group_.broadcast(ints.data(), ints.size() * sizeof(int32_t), 0, timeout)) {
      hal::set_group_failure(group_.error());
      return unavailable("{}", group_.error());
    }
    return {};
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
  bool aborting_ = false;
};

// What must agree between the ranks, as integers.
std::vector<int64_t> fingerprint(const Model& m) {
  const ModelConfig& c = m.config();
  const KvSpec kv = m.kv_spec();
  return {c.num_hidden_layers,
          c.hidden_size,
          c.vocab_size,
          kv.n_layers,
          kv.k_width,
          kv.v_width,
          static_cast<int64_t>(kv.dtype),
          static_cast<int64_t>(m.devices().size())};
}

}  // namespace

bool is_worker() {
  const hal::ProcessGroup* g = hal::process_group();
  return g && g->rank() > 0;
}

Status check_same_model(const Model& model, hal::ProcessGroup& group) {
  static const char* kWhat[] = {"layers",  "hidden size", "vocabulary", "KV layers",
                                "K width", "V width",     "KV dtype",   "devices"};
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

void run_worker(Model& model, hal::ProcessGroup& group) {
  CAI_LOG_INFO("worker of {} ranks on {} (pid {}): waiting for the leader's steps", group.size(), group.host(),
               getpid());
  // mpirun forwards a stop to every rank: the leader ends the job (its stop message), a worker goes on until then.
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);
  std::unique_ptr<KvCache> kv;
  std::vector<float> logits;
  Status st;
  for (;;) {
    StepHeader h;
    if (!group.broadcast(&h, sizeof h, 0, -1)) {
      st = unavailable("waiting for the leader: {}", group.error());
      break;
    }
    if (h.kind == static_cast<int64_t>(StepKind::kStop)) break;
    std::vector<int32_t> ints(static_cast<size_t>(h.n_ints));
    if (!group.broadcast(ints.data(), ints.size() * sizeof(int32_t), 0, hal::collective_timeout())) {
      st = unavailable("receiving a step: {}", group.error());
      break;
    }
    Result<DecodedStep> step = decode_step(ints, static_cast<int>(h.kv_block_size));
    if (!step.ok()) {
      st = step.status();
      break;
    }
    if (!kv || kv->n_blocks() != h.kv_blocks || kv->block_size() != h.kv_block_size ||
        kv->host_request().n_layers != h.kv_host_layers) {
      const KvHostLayers host{static_cast<int>(h.kv_host_layers), static_cast<int>(h.kv_step_tokens)};
      Result<KvCache> made = KvCache::create(model.kv_shards(), model.kv_spec(), static_cast<int>(h.kv_blocks),
                                             static_cast<int>(h.kv_block_size), host);
      if (!made.ok()) {
        st = made.status();
        break;
      }
      kv = std::make_unique<KvCache>(std::move(*made));
      if (!kv->host_layers().empty()) CAI_LOG_INFO("KV offload: {}", describe_host_tier(*kv));
    }
    logits.resize(step->batch.logit_rows.size() * static_cast<size_t>(model.config().vocab_size));
    st = model.forward(step->batch, *kv, logits.data());
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
}

}  // namespace cai::dist
