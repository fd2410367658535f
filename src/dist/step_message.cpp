// StepMessage encoding: [n_tok, n_logits, n_seqs] tokens positions slots logit_rows, then per sequence
// [q_begin, n_q, pos0, n_blocks, blocks...].
#include "dist/step_message.h"

namespace cai::dist {

namespace {

int64_t blocks_used(const hal::AttnSeq& s, int block_size) {
  return (int64_t{s.pos0} + s.n_q + block_size - 1) / block_size;
}

}  // namespace

std::vector<int32_t> encode_step(const StepBatch& b, int block_size) {
  std::vector<int32_t> out{static_cast<int32_t>(b.tokens.size()), static_cast<int32_t>(b.logit_rows.size()),
                           static_cast<int32_t>(b.seqs.size())};
  for (const std::vector<int32_t>* v : {&b.tokens, &b.positions, &b.slots, &b.logit_rows})
    out.insert(out.end(), v->begin(), v->end());
  for (const hal::AttnSeq& s : b.seqs) {
    const int32_t used = static_cast<int32_t>(blocks_used(s, block_size));
    out.insert(out.end(), {s.q_begin, s.n_q, s.pos0, used});
    out.insert(out.end(), s.block_table, s.block_table + used);
  }
  return out;
}

Result<DecodedStep> decode_step(const std::vector<int32_t>& ints, int block_size) {
  size_t at = 0;
  auto take = [&](size_t n) -> Result<const int32_t*> {
    if (n > ints.size() - at) return corrupt("step message: {} integers, reading {} at {}", ints.size(), n, at);
    const int32_t* p = ints.data() + at;
    at += n;
    return p;
  };
  CAI_ASSIGN_OR_RETURN(const int32_t* counts, take(3));
  if (counts[0] < 0 || counts[1] < 0 || counts[2] < 0 || block_size <= 0)
    return corrupt("step message: negative counts or block size");
  const size_t n_tok = static_cast<size_t>(counts[0]), n_logits = static_cast<size_t>(counts[1]);
  const size_t n_seqs = static_cast<size_t>(counts[2]);
  DecodedStep d;
  for (std::vector<int32_t>* v : {&d.batch.tokens, &d.batch.positions, &d.batch.slots, &d.batch.logit_rows}) {
    const size_t n = v == &d.batch.logit_rows ? n_logits : n_tok;
    CAI_ASSIGN_OR_RETURN(const int32_t* p, take(n));
    v->assign(p, p + n);
  }
  std::vector<size_t> offsets;
  for (size_t s = 0; s < n_seqs; ++s) {
    CAI_ASSIGN_OR_RETURN(const int32_t* h, take(4));
    const hal::AttnSeq seq{h[0], h[1], h[2], nullptr};
    if (h[3] < 0 || seq.n_q < 0 || seq.pos0 < 0 || h[3] != blocks_used(seq, block_size))
      return corrupt("step message: sequence {} has {} blocks for {} + {} positions", s, h[3], seq.pos0, seq.n_q);
    CAI_ASSIGN_OR_RETURN(const int32_t* blocks, take(static_cast<size_t>(h[3])));
    offsets.push_back(d.tables.size());
    d.tables.insert(d.tables.end(), blocks, blocks + h[3]);
    d.batch.seqs.push_back(seq);
  }
  if (at != ints.size()) return corrupt("step message: {} integers left over", ints.size() - at);
  for (size_t s = 0; s < n_seqs; ++s) d.batch.seqs[s].block_table = d.tables.data() + offsets[s];
  return d;
}

}  // namespace cai::dist
