// speculative_greedy: per-sequence drafts over one KV cache with a run of blocks per sequence.
#include "runtime/spec/spec_decode.h"

#include <algorithm>
#include <chrono>

#include "core/seconds_since.h"
#include "runtime/sampler.h"
#include "runtime/spec/make_drafter.h"
#include "runtime/step_rows.h"

namespace cai {

namespace {

constexpr int kBlockSize = 16;

struct Seq {
  std::vector<int32_t> tokens;  // prompt + generated; the last one's KV is not computed yet (after the first step)
  std::vector<int32_t> draft;
  int n_computed = 0;
  std::span<const int32_t> table;  // its run of blocks
};

}  // namespace

Result<SpecRun> speculative_greedy(Model& model, const SpecOptions& spec,
                                   const std::vector<std::vector<int32_t>>& prompts, int n_gen, Model* draft_model) {
  if (prompts.empty() || n_gen < 1) return invalid_argument("speculative_greedy: no prompt or no token to generate");
  const int k = spec.method == SpecMethod::kOff ? 0 : spec.tokens;
  const int n_seqs = static_cast<int>(prompts.size());
  size_t longest = 0;
  for (const auto& p : prompts) {
    if (p.empty()) return invalid_argument("speculative_greedy: an empty prompt");
    longest = std::max(longest, p.size());
  }
  const int per_seq = (static_cast<int>(longest) + n_gen + k + kBlockSize) / kBlockSize;
  CAI_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(model.kv_shards(), model.kv_spec(), n_seqs * per_seq, kBlockSize));
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<Drafter> drafter,
                       make_drafter(model, spec, n_seqs * per_seq, kBlockSize, draft_model));
  const std::vector<int32_t> table = identity_block_table(n_seqs * per_seq);
  const size_t vocab = static_cast<size_t>(model.config().vocab_size);
  const size_t hidden_size = static_cast<size_t>(model.config().hidden_size);
  const bool wants_hidden = drafter && drafter->needs_hidden();
  std::vector<Seq> seqs(static_cast<size_t>(n_seqs));
  for (int s = 0; s < n_seqs; ++s) {
    Seq& q = seqs[static_cast<size_t>(s)];
    q.tokens = prompts[static_cast<size_t>(s)];
    q.table = std::span(table).subspan(static_cast<size_t>(s * per_seq), static_cast<size_t>(per_seq));
  }
  for (hal::Device* d : model.devices()) d->set_batch_invariant(true);
  SpecRun run;
  run.generated.resize(seqs.size());
  run.drafted_at.assign(static_cast<size_t>(k), 0);
  run.accepted_at.assign(static_cast<size_t>(k), 0);
  std::vector<float> logits, hidden;
  std::vector<int32_t> starts(seqs.size()), rows(seqs.size());
  std::vector<bool> active(seqs.size());
  Status status;
  auto t0 = std::chrono::steady_clock::now();
  for (bool first = true; status.ok(); first = false) {
    StepBatch b;
    for (size_t s = 0; s < seqs.size(); ++s) {
      Seq& q = seqs[s];
      active[s] = static_cast<int>(run.generated[s].size()) < n_gen;
      if (!active[s]) continue;
      starts[s] = q.n_computed;
      std::vector<int32_t> in(q.tokens.begin() + q.n_computed, q.tokens.end());
      in.insert(in.end(), q.draft.begin(), q.draft.end());
      rows[s] = append_sequence(b, in, q.n_computed, q.table, kBlockSize);
      const int32_t n = static_cast<int32_t>(in.size());
      for (int32_t i = n - 1 - static_cast<int32_t>(q.draft.size()); i < n; ++i) b.logit_rows.push_back(rows[s] + i);
    }
    if (b.tokens.empty()) break;
    logits.resize(b.logit_rows.size() * vocab);
    hidden.resize(wants_hidden ? b.tokens.size() * hidden_size : 0);
    status = model.forward(b, kv, logits.data(), wants_hidden ? hidden.data() : nullptr);
    if (!status.ok()) break;
    // Greedy verification: draft token j stands while the argmax of the row before it chose it.
    std::vector<DraftSeq> next;
    size_t row = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
      if (!active[s]) continue;
      Seq& q = seqs[s];
      std::vector<int32_t>& out = run.generated[s];
      const size_t n_rows = q.draft.size() + 1;
      size_t taken = 0;
      while (taken < n_rows) {
        const int32_t t = argmax({logits.data() + (row + taken) * vocab, vocab});
        out.push_back(t);
        if (++taken == n_rows || t != q.draft[taken - 1]) break;
      }
      row += n_rows;
      if (!first) ++run.seq_steps;
      run.drafted += static_cast<int64_t>(q.draft.size());
      run.accepted += static_cast<int64_t>(taken) - 1;
      for (size_t j = 0; j < q.draft.size(); ++j) {
        ++run.drafted_at[j];
        run.accepted_at[j] += j + 1 < taken;
      }
      q.n_computed = static_cast<int>(q.tokens.size() + taken) - 1;
      q.tokens.insert(q.tokens.end(), out.end() - static_cast<ptrdiff_t>(taken), out.end());
      q.draft.clear();
      const int left = n_gen - static_cast<int>(out.size());
      if (left > 0)
        next.push_back(
            {static_cast<uint64_t>(s), q.tokens, q.n_computed, starts[s], rows[s], q.table, std::min(k, left - 1)});
    }
    if (first) {
      run.prompt_seconds = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
    } else {
      ++run.steps;
    }
    if (!drafter || k == 0 || next.empty()) continue;
    const auto t_draft = std::chrono::steady_clock::now();
    Result<std::vector<std::vector<int32_t>>> drafts = drafter->draft(next, hidden.data());
    run.draft_seconds += seconds_since(t_draft);
    if (!drafts.ok()) {
      status = drafts.status();
      break;
    }
    for (size_t i = 0; i < next.size(); ++i) seqs[next[i].id].draft = std::move((*drafts)[i]);
  }
  run.decode_seconds = seconds_since(t0);
  for (hal::Device* d : model.devices()) d->set_batch_invariant(false);
  CAI_TRY(status);
  return run;
}

}  // namespace cai
