// EngineImpl: the engine thread. Each step: take new requests and cancels → Scheduler::schedule() → one batched
// Model::forward over every scheduled sequence → sample → detokenize / stop strings → events → Scheduler::update().
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "cai/engine.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "runtime/engine_kv_sizing.h"
#include "runtime/grammar/masker_cache.h"
#include "runtime/prompt_logprobs.h"
#include "runtime/request_state.h"
#include "runtime/sched/scheduler.h"
#include "runtime/spec/make_drafter.h"
#include "runtime/spec/ngram_drafter.h"
#include "runtime/spec/verification.h"
#include "runtime/step_rows.h"

namespace cai {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
    case FinishReason::kNone: break;
  }
  return "none";
}

namespace {

FinishReason reason_of(RequestStatus s) {
  switch (s) {
    case RequestStatus::kFinishedStop: return FinishReason::kStop;
    case RequestStatus::kFinishedLength: return FinishReason::kLength;
    case RequestStatus::kFinishedCancelled: return FinishReason::kCancelled;
    default: return FinishReason::kError;
  }
}

// server_spec: the server's speculative decoding (null when off).
Status validate(const GenerationRequest& r, int n_vocab, int ctx_size, const SpecOptions* server_spec) {
  if (r.prompt.empty()) return invalid_argument("the prompt is empty");
  for (int32_t t : r.prompt)
    if (t < 0 || t >= n_vocab) return invalid_argument("token id {} is outside the vocabulary of {}", t, n_vocab);
  if (r.max_tokens < 1) return invalid_argument("max_tokens must be at least 1, got {}", r.max_tokens);
  if (static_cast<int64_t>(r.prompt.size()) + r.max_tokens > ctx_size)
    return invalid_argument("prompt of {} tokens plus max_tokens {} exceeds the context size {}", r.prompt.size(),
                            r.max_tokens, ctx_size);
  const SamplingParams& s = r.sampling;
  if (!(s.temperature >= 0) || !(s.top_p > 0 && s.top_p <= 1) || !(s.min_p >= 0 && s.min_p <= 1) || s.top_k < 0 ||
      !(s.repetition_penalty > 0) || !std::isfinite(s.presence_penalty) || !std::isfinite(s.frequency_penalty))
    return invalid_argument("sampling parameters out of range");
  if (r.top_logprobs > 20) return invalid_argument("top_logprobs must be at most 20");
  if (r.spec_tokens < -1) return invalid_argument("speculative tokens must be -1 (the server's), 0 (off) or more");
  if (r.spec_method == SpecMethod::kDraft || r.spec_method == SpecMethod::kMtp) {
    if (!server_spec || *r.spec_method != server_spec->method)
      return invalid_argument(
          "speculative method '{}' is not loaded on this server (it runs '{}'; 'ngram' and 'off' "
          "work everywhere)",
          spec_method_name(*r.spec_method), spec_method_name(server_spec ? server_spec->method : SpecMethod::kOff));
  }
  if (r.n < 1 || r.n > GenerationRequest::kMaxChoices)
    return invalid_argument("n must be between 1 and {}, got {}", GenerationRequest::kMaxChoices, r.n);
  for (const auto& [t, bias] : s.logit_bias) {
    if (t < 0 || t >= n_vocab)
      return invalid_argument("logit_bias token id {} is outside the vocabulary of {}", t, n_vocab);
    if (!(bias >= -100 && bias <= 100)) return invalid_argument("logit_bias for token {} must be in [-100, 100]", t);
  }
  return {};
}

// Choice i's seed: choice 0 keeps the request's, the others get distinct ones derived from it (splitmix64).
uint64_t choice_seed(uint64_t seed, int i) {
  if (i == 0) return seed;
  uint64_t z = seed + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Pending {
  uint64_t id;
  GenerationRequest request;
  EventCallback on_event;
};

class EngineImpl final : public Engine {
 public:
  EngineImpl(LoadedModel lm, const EngineOptions& o, KvCache kv, Scheduler sched, int ctx, LoadedModel draft,
             std::unique_ptr<Drafter> drafter)
      : lm_(std::move(lm)), opt_(o), kv_(std::move(kv)), sched_(std::move(sched)), ctx_size_(ctx),
        draft_(std::move(draft)), drafter_(std::move(drafter)), ngram_(o.spec.ngram_min, o.spec.ngram_max) {
    stats_.kv_dtype = std::string(dtype_name(kv_.spec().dtype));
    stats_.spec_method = drafter_ ? spec_method_name(opt_.spec.method) : "off";
    stats_.spec_tokens = drafter_ ? opt_.spec.tokens : 0;
    stats_.kv_bytes_per_token = kv_.spec().bytes_per_token();
    stats_.token_budget_max = o.max_tokens_per_step;
    stats_.kv_offload_layers = static_cast<int>(kv_.host_layers().size());
    stats_.kv_host_bytes = kv_.host_traffic().host_bytes;
    publish_stats();  // /metrics shows the KV pool before the first step
    thread_ = std::thread([this] { loop(); });
  }
  ~EngineImpl() override { shutdown(); }

  Result<uint64_t> submit(GenerationRequest request, EventCallback on_event) override {
    CAI_TRY(validate(request, lm_.model->config().vocab_size, ctx_size_, drafter_ ? &opt_.spec : nullptr));
    if (request.grammar && !lm_.tokenizer) return invalid_argument("constrained output needs the model's tokenizer");
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return unavailable("the engine is shutting down");
    // All n choices are queued or none: they need n places (an empty queue takes any n).
    const int queued = n_incoming_ + n_waiting_.load();
    if (queued > 0 && queued + request.n > opt_.max_queue)
      return resource_exhausted("{} sequences are already waiting (max_queue {}){}", queued, opt_.max_queue,
                                request.n > 1 ? fmt::format(", no room for {} more", request.n) : "");
    const uint64_t id = next_id_;
    next_id_ += static_cast<uint64_t>(request.n);  // choice i runs as sequence id + i
    n_incoming_ += request.n;
    incoming_.push_back({id, std::move(request), std::move(on_event)});
    cv_.notify_one();
    return id;
  }

  void cancel(uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(id);
    cv_.notify_one();
  }

  EngineStats stats() const override {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return stats_;
  }
  const LoadedModel& model() const override { return lm_; }
  int ctx_size() const override { return ctx_size_; }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop();
  void take_new_work(std::deque<Pending>& incoming, std::vector<uint64_t>& cancels);
  void add_choices(Pending& p);
  void run_step();
  Status sample_and_emit(const SchedulerOutput& out, const std::vector<float>& logits);
  // Speculative decoding: each running request's draft for its next step (q_begins: its first row in the step).
  Status draft_next(const SchedulerOutput& out, const std::vector<int32_t>& q_begins);
  // The method request `id` drafts with: its own choice, else the server's.
  SpecMethod method_of(uint64_t id) const;
  // The draft tokens request `id` takes next step: its K (the server's, or less as asked), within max_tokens.
  int draft_length(uint64_t id, const SchedRequest& r) const;
  void fail_step(const SchedulerOutput& out, const Status& st);
  void end_request(uint64_t id, FinishReason reason, const Status& error = {});
  StreamEvent base_event(uint64_t id) const;
  void publish_stats();
  void adapt_to_temperature();

  LoadedModel lm_;
  EngineOptions opt_;
  KvCache kv_;
  Scheduler sched_;
  int ctx_size_;
  LoadedModel draft_;                 // --spec draft: the draft model drafter_ runs
  std::unique_ptr<Drafter> drafter_;  // the server's speculative method (opt_.spec); null when off
  NgramDrafter ngram_;                // prompt lookup, for requests that ask for it whatever the server's method
  std::vector<float> hidden_;         // the step's final hidden states, for a drafter that reads them
  std::thread thread_;

  std::mutex mu_;  // guards incoming_, n_incoming_, cancels_, stop_
  std::condition_variable cv_;
  std::deque<Pending> incoming_;
  int n_incoming_ = 0;  // sequences in incoming_ (the sum of their n)
  std::vector<uint64_t> cancels_;
  bool stop_ = false;
  uint64_t next_id_ = 1;
  std::atomic<int> n_waiting_{0};

  std::unordered_map<uint64_t, RequestState> live_;  // engine thread only
  grammar::MaskerCache maskers_;                     // structured output: one token masker per grammar in use
  ThreadPool host_pool_{0};  // host-side work between forward passes (sampling), one thread per core
  mutable std::mutex stats_mu_;
  EngineStats stats_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
};

void EngineImpl::loop() {
  for (;;) {
    std::deque<Pending> incoming;
    std::vector<uint64_t> cancels;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || !cancels_.empty() || sched_.has_work(); });
      if (stop_) break;
      incoming.swap(incoming_);
      n_incoming_ = 0;
      cancels.swap(cancels_);
    }
    take_new_work(incoming, cancels);
    if (sched_.has_work()) {
      adapt_to_temperature();
      run_step();
    }
    publish_stats();
  }
  // Shutting down: everything still queued or running ends as cancelled.
  std::lock_guard<std::mutex> lock(mu_);
  for (Pending& p : incoming_) {
    for (int i = 0; i < p.request.n; ++i) {
      StreamEvent ev;
      ev.index = i;
      ev.finish = FinishReason::kCancelled;
      p.on_event(ev);
    }
  }
  incoming_.clear();
  std::vector<uint64_t> ids;
  for (const auto& [id, st] : live_) ids.push_back(id);
  for (uint64_t id : ids) end_request(id, FinishReason::kCancelled);
}

// Each choice of a request is a sequence of its own; choices after the first follow the first so that they share the
// prompt's KV blocks once it is computed (see Scheduler::add).
void EngineImpl::add_choices(Pending& p) {
  const int n = p.request.n;
  std::shared_ptr<grammar::TokenMasker> masker;  // shared by the choices (and by other requests with this grammar)
  if (p.request.grammar && lm_.tokenizer)
    masker = maskers_.get(*p.request.grammar, p.request.prompt_opens_think, *lm_.tokenizer);
  for (int i = 0; i < n; ++i) {
    const uint64_t id = p.id + static_cast<uint64_t>(i);
    GenerationRequest r = i + 1 < n ? p.request : std::move(p.request);
    r.sampling.seed = choice_seed(r.sampling.seed, i);
    const bool reuse_prefix = !(i == 0 && r.prompt_logprobs && r.top_logprobs >= 0);
    Status st = sched_.add(id, r.prompt, r.max_tokens, i == 0 ? 0 : p.id, reuse_prefix);
    prompt_tokens_ += i == 0 ? r.prompt.size() : 0;
    const bool starts_in_reasoning = r.prompt_opens_think;
    RequestState& rs =
        live_.emplace(id, RequestState(std::move(r), p.on_event, lm_.tokenizer.get(), p.id, i)).first->second;
    if (masker) rs.set_grammar(std::make_unique<grammar::SequenceGrammar>(masker, starts_in_reasoning));
    if (st.ok() && masker && !masker->can_start())
      st = invalid_argument("the model's vocabulary cannot write the text the output format requires");
    if (!st.ok()) end_request(id, FinishReason::kError, st);
  }
}

void EngineImpl::take_new_work(std::deque<Pending>& incoming, std::vector<uint64_t>& cancels) {
  for (Pending& p : incoming) add_choices(p);
  for (uint64_t id : cancels) {  // every unfinished choice of the request; none when it already finished
    std::vector<uint64_t> seqs;
    for (const auto& [seq, st] : live_)
      if (st.group() == id) seqs.push_back(seq);
    for (uint64_t seq : seqs) end_request(seq, FinishReason::kCancelled);
  }
  n_waiting_ = sched_.n_waiting();
}

StreamEvent EngineImpl::base_event(uint64_t id) const {
  StreamEvent ev;
  if (const SchedRequest* r = sched_.request(id)) {
    ev.n_prompt_tokens = r->n_prompt;
    ev.n_cached_prompt_tokens = r->n_cached_prompt_tokens;
    ev.n_generated_tokens = r->n_generated();
  }
  if (auto it = live_.find(id); it != live_.end()) {
    ev.n_draft_tokens = it->second.n_draft_tokens();
    ev.n_accepted_tokens = it->second.n_accepted_tokens();
  }
  return ev;
}

void EngineImpl::end_request(uint64_t id, FinishReason reason, const Status& error) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  StreamEvent ev = base_event(id);
  if (sched_.request(id))  // still queued or running: free its blocks now
    (void)sched_.finish(
        id, reason == FinishReason::kCancelled ? RequestStatus::kFinishedCancelled : RequestStatus::kFinishedError);
  publish_stats();
  ev.finish = reason;
  ev.error = error.message();
  ev.error_code = error.code();
  it->second.emit(ev);
  live_.erase(it);
}

void EngineImpl::run_step() {
  SchedulerOutput out = sched_.schedule();
  if (out.requests.empty()) return;
  StepBatch batch;
  std::vector<int32_t> q_begins;
  for (const ScheduledRequest& r : out.requests) {
    const int32_t q_begin = append_sequence(batch, r.tokens, r.start, r.block_table, kv_.block_size());
    q_begins.push_back(q_begin);
    if (r.sample)  // the last token's row, and each draft token's
      for (int i = r.n_new - 1 - r.n_draft; i < r.n_new; ++i) batch.logit_rows.push_back(q_begin + i);
  }
  const size_t n_sampled_rows = batch.logit_rows.size();
  std::vector<PromptLogprobRow> prompt_rows;  // their rows follow the sampled ones
  for (size_t i = 0; i < out.requests.size(); ++i) {
    auto it = live_.find(out.requests[i].id);
    if (it != live_.end() && it->second.wants_prompt_logprobs() && lm_.tokenizer)
      add_prompt_logprob_rows(out.requests[i], *sched_.request(out.requests[i].id), q_begins[i], it->second,
                              *lm_.tokenizer, batch, prompt_rows);
  }
  const size_t vocab = static_cast<size_t>(lm_.model->config().vocab_size);
  std::vector<float> logits(batch.logit_rows.size() * vocab);
  const bool hidden = drafter_ && drafter_->needs_hidden();
  hidden_.resize(hidden ? batch.tokens.size() * static_cast<size_t>(lm_.model->config().hidden_size) : 0);
  Status st = lm_.model->forward(batch, kv_, logits.data(), hidden ? hidden_.data() : nullptr);
  if (st.ok() && !prompt_rows.empty())
    score_prompt_rows(prompt_rows, std::span<const float>(logits).subspan(n_sampled_rows * vocab), vocab,
                      *lm_.tokenizer, host_pool_);
  if (st.ok()) st = sample_and_emit(out, logits);
  if (st.ok()) st = draft_next(out, q_begins);
  if (!st.ok()) fail_step(out, st);
}

SpecMethod EngineImpl::method_of(uint64_t id) const {
  return live_.at(id).request().spec_method.value_or(drafter_ ? opt_.spec.method : SpecMethod::kOff);
}

int EngineImpl::draft_length(uint64_t id, const SchedRequest& r) const {
  if (r.n_computed + 1 != static_cast<int>(r.tokens.size()) || method_of(id) == SpecMethod::kOff) return 0;
  if (opt_.spec.max_batch > 0 && sched_.n_running() > opt_.spec.max_batch) return 0;
  const int asked = live_.at(id).request().spec_tokens;
  const int k = asked < 0 ? opt_.spec.tokens : std::min(asked, opt_.spec.tokens);
  return std::clamp(std::min(k, r.max_tokens - r.n_generated() - 1), 0, k);
}

// The server's drafter sees every sequence the step computed (a model drafter keeps its cache level with the main
// one even for sequences that draft otherwise) and drafts for those that use its method; prompt lookup drafts for the
// requests that ask for it on a server with another method.
Status EngineImpl::draft_next(const SchedulerOutput& out, const std::vector<int32_t>& q_begins) {
  struct Want {
    const SchedRequest* r;
    int start, row, n;
    SpecMethod method;
  };
  std::vector<Want> pending;
  for (size_t i = 0; i < out.requests.size(); ++i) {
    const ScheduledRequest& s = out.requests[i];
    const SchedRequest* r = sched_.request(s.id);
    if (!r || r->status != RequestStatus::kRunning || !live_.count(s.id)) continue;
    int want = draft_length(s.id, *r);
    // Drafters that write caches of their own do so up to the draft's last position.
    if (want > 0 && !sched_.reserve(s.id, r->n_computed + want)) want = 0;
    pending.push_back({r, s.start, q_begins[i], want, method_of(s.id)});
  }
  const SpecMethod server = drafter_ ? opt_.spec.method : SpecMethod::kOff;
  std::vector<DraftSeq> by_server, by_ngram;  // block tables read once every reservation is made
  for (const Want& w : pending) {
    DraftSeq seq{w.r->id, w.r->tokens, w.r->n_computed, w.start, w.row, sched_.kv().block_table(w.r->id), w.n};
    if (w.method == SpecMethod::kNgram && server != SpecMethod::kNgram && w.n > 0) by_ngram.push_back(seq);
    if (!drafter_) continue;
    if (w.method != server) seq.max_draft = 0;
    by_server.push_back(seq);
  }
  Drafter* ngram = &ngram_;
  for (auto [drafter, seqs] : {std::pair{drafter_.get(), &by_server}, std::pair{ngram, &by_ngram}}) {
    if (seqs->empty()) continue;
    CAI_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> drafts, drafter->draft(*seqs, hidden_.data()));
    for (size_t i = 0; i < seqs->size(); ++i)
      if (!drafts[i].empty()) CAI_TRY(sched_.set_draft((*seqs)[i].id, std::move(drafts[i])));
  }
  return {};
}

Status EngineImpl::sample_and_emit(const SchedulerOutput& out, const std::vector<float>& logits) {
  const size_t vocab = static_cast<size_t>(lm_.model->config().vocab_size);
  struct Draw {
    const ScheduledRequest* r;
    RequestState* rs;
    std::span<const float> rows;  // the last n_draft + 1 rows of the request
    VerifiedTokens taken;
  };
  std::vector<Draw> draws;
  size_t row = 0;
  for (const ScheduledRequest& r : out.requests) {
    if (!r.sample) continue;
    const size_t n_rows = static_cast<size_t>(r.n_draft) + 1;
    draws.push_back({&r, &live_.at(r.id), {&logits[row * vocab], n_rows * vocab}, {}});
    row += n_rows;
  }
  // Each request samples from its own copy of its rows with its own RNG, so the draws run on every core at once
  // (with 16 streams and a 150k vocabulary they are several percent of a step when done one after another).
  host_pool_.parallel_for(static_cast<int64_t>(draws.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Draw& d = draws[static_cast<size_t>(i)];
      const std::span<const int32_t> draft(d.r->tokens.end() - d.r->n_draft, d.r->tokens.end());
      d.taken = verify_draft(*d.rs, d.rows, draft, sched_.request(d.r->id)->tokens, lm_.tokenizer.get());
    }
  });
  std::vector<SampledToken> sampled;
  std::unordered_map<uint64_t, StreamEvent> events;
  for (Draw& d : draws) {
    StreamEvent& ev = events[d.r->id];
    VerifiedTokens& t = d.taken;
    d.rs->count_draft(d.r->n_draft, t.n_accepted());
    ev.tokens = t.tokens;
    ev.logprobs = std::move(t.logprobs);
    ev.prompt_logprobs = d.rs->take_prompt_logprobs();
    ev.text = std::move(t.text);
    sampled.push_back({d.r->id, t.tokens.back(), t.stop, {t.tokens.begin(), t.tokens.end() - 1}});
    generated_tokens_ += t.tokens.size();
  }
  for (auto& [id, ev] : events) {  // counts before update(): a finished request is gone from the scheduler after it
    const StreamEvent counts = base_event(id);
    ev.n_prompt_tokens = counts.n_prompt_tokens;
    ev.n_cached_prompt_tokens = counts.n_cached_prompt_tokens;
    ev.n_generated_tokens = counts.n_generated_tokens + static_cast<int>(ev.tokens.size());
    ev.n_draft_tokens = counts.n_draft_tokens;
    ev.n_accepted_tokens = counts.n_accepted_tokens;
  }
  CAI_ASSIGN_OR_RETURN(std::vector<FinishedRequest> finished, sched_.update(out, sampled));
  for (const FinishedRequest& f : finished) {
    auto it = live_.find(f.id);
    if (it == live_.end()) continue;
    StreamEvent& ev = events[f.id];
    ev.text += it->second.finish_text();
    ev.finish = reason_of(f.status);
    ev.stop_sequence = it->second.stop_string();
    ev.n_generated_tokens = f.n_generated;
  }
  publish_stats();  // a client reading stats after its final event sees this step
  for (auto& [id, ev] : events) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    it->second.emit(ev);
    if (ev.finish != FinishReason::kNone) live_.erase(it);
  }
  return {};
}

void EngineImpl::fail_step(const SchedulerOutput& out, const Status& st) {
  CAI_LOG_ERROR("engine step failed: {}", st.to_string());
  for (const ScheduledRequest& r : out.requests) end_request(r.id, FinishReason::kError, st);
  (void)sched_.update(out, {});  // closes the step: its requests are gone, the engine serves the next ones
}

void EngineImpl::adapt_to_temperature() {
  if (opt_.thermal_limit_c <= 0 || sched_.counters().steps % 8 != 0) return;
  std::optional<float> temp;  // the hottest of the model's devices governs: every step passes through all of them
  for (const hal::Device* d : lm_.model->devices())
    if (const std::optional<float> t = d->telemetry().temperature_c; t && (!temp || *t > *temp)) temp = t;
  if (!temp) return;
  const int budget = sched_.token_budget();
  if (*temp >= opt_.thermal_limit_c) {
    const int lowered = sched_.set_token_budget(budget / 2);
    if (lowered != budget) CAI_LOG_WARN("device at {:.0f} °C: step budget {} → {} tokens", *temp, budget, lowered);
  } else if (*temp <= opt_.thermal_limit_c - 5 && budget < opt_.max_tokens_per_step) {
    const int raised = sched_.set_token_budget(budget * 2);
    CAI_LOG_INFO("device cooled to {:.0f} °C: step budget {} → {} tokens", *temp, budget, raised);
  }
}

void EngineImpl::publish_stats() {
  std::lock_guard<std::mutex> lock(stats_mu_);
  const SchedulerCounters& c = sched_.counters();
  stats_.n_running = sched_.n_running();
  stats_.n_waiting = sched_.n_waiting();
  n_waiting_ = stats_.n_waiting;
  stats_.kv_blocks_total = sched_.kv().pool().n_total();
  stats_.kv_blocks_used = sched_.kv().pool().n_used();
  stats_.prompt_tokens = prompt_tokens_;
  stats_.prefix_hit_tokens = c.prefix_hit_tokens;
  stats_.computed_prompt_tokens = c.computed_tokens;
  stats_.generated_tokens = generated_tokens_;
  stats_.preemptions = c.preemptions;
  stats_.steps = c.steps;
  stats_.spec_draft_tokens = c.draft_tokens;
  stats_.spec_accepted_tokens = c.accepted_tokens;
  stats_.spec_verify_steps = c.verify_steps;
  stats_.token_budget = sched_.token_budget();
  if (const hal::Communicator* comm = lm_.model->communicator()) stats_.device_transfer_bytes = comm->bytes_moved();
  const KvHostTraffic host = kv_.host_traffic();
  stats_.kv_offload_uploaded_bytes = host.uploaded;
  stats_.kv_offload_downloaded_bytes = host.downloaded;
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(LoadedModel lm, const EngineOptions& o, LoadedModel draft) {
  if (!lm.model) return invalid_argument("Engine::create: no model");
  if (o.block_size <= 0 || o.max_batch <= 0 || o.max_tokens_per_step <= 0 || o.max_queue <= 0)
    return invalid_argument("engine options must be positive (block size, batch, step budget, queue)");
  const Model& m = *lm.model;
  const KvSpec spec = m.kv_spec();
  const size_t block_bytes = spec.bytes_per_token() * static_cast<size_t>(o.block_size);
  const int model_ctx = m.config().max_position_embeddings;
  CAI_ASSIGN_OR_RETURN(const int host_layers, host_layers_for(m, o));
  const size_t kv_bytes = o.kv_memory_bytes > 0 ? o.kv_memory_bytes : default_kv_bytes(m, o, block_bytes, host_layers);
  const int n_blocks =
      o.n_kv_blocks > 0 ? o.n_kv_blocks : static_cast<int>(kv_bytes / std::max<size_t>(1, block_bytes));
  if (n_blocks < 1) return invalid_argument("KV memory {} bytes holds no block of {} bytes", kv_bytes, block_bytes);
  const int want_ctx = o.ctx_size > 0 ? o.ctx_size : model_ctx;
  CAI_TRY(check_context_fits(o, want_ctx, n_blocks, block_bytes, kv_bytes));
  const int ctx = static_cast<int>(std::min<int64_t>(want_ctx, int64_t{n_blocks} * o.block_size));
  CAI_ASSIGN_OR_RETURN(KvCache kv, create_kv_cache(m, o, n_blocks, host_layers));
  SchedulerOptions so{o.max_batch, o.max_tokens_per_step, o.block_size, n_blocks, o.prefix_caching};
  CAI_ASSIGN_OR_RETURN(Scheduler sched, Scheduler::create(so));
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<Drafter> drafter,
                       make_drafter(*lm.model, o.spec, n_blocks, o.block_size, draft.model.get()));
  for (hal::Device* d : lm.model->devices()) d->set_batch_invariant(true);  // tokens must not depend on batch-mates
  CAI_LOG_INFO("engine: {} KV blocks × {} tokens ({:.1f} MiB, {}), context {}, batch {}, step budget {}", n_blocks,
               o.block_size, static_cast<double>(kv.total_bytes()) / (1 << 20), dtype_name(spec.dtype), ctx,
               o.max_batch, o.max_tokens_per_step);
  if (!kv.host_layers().empty()) CAI_LOG_INFO("engine: KV offload: {}", describe_host_tier(kv));
  if (drafter)
    CAI_LOG_INFO("engine: speculative decoding with {}, {} draft tokens per step", spec_method_name(o.spec.method),
                 o.spec.tokens);
  return std::unique_ptr<Engine>(std::make_unique<EngineImpl>(std::move(lm), o, std::move(kv), std::move(sched), ctx,
                                                              std::move(draft), std::move(drafter)));
}

}  // namespace cai
