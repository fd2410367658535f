// Token chains: embedding and output rows set so that each link's `from` token makes the model write its `to` token.
//
// Link i owns hidden dimension i: `from`'s embedding is 1 there (its other values stay random, about 0.02), and `to`'s
// output row is 10 there. The layers' random weights add little to that residual, so after the final norm dimension i
// holds about sqrt(hidden_size) and `to`'s logit is about 10·sqrt(hidden_size) (80 at 64) while every other logit stays
// near 0: sampling at any temperature a client sends picks `to`.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "model_spec.h"

namespace cai::mkmodel {
namespace {

constexpr float kEmbedValue = 1.0f;
constexpr float kOutputValue = 10.0f;

}  // namespace

Status add_token_chain(ModelSpec& m, const std::vector<std::pair<int64_t, int64_t>>& links) {
  const ModelShape& s = m.shape;
  if (s.tied) return invalid_argument("--chain needs untied embeddings (--tie-embeddings false)");
  if (static_cast<int64_t>(links.size()) > s.hidden)
    return invalid_argument("--chain has {} links; hidden_size {} holds at most that many", links.size(), s.hidden);
  auto embed = std::make_shared<RowOverrides>();
  auto output = std::make_shared<RowOverrides>();
  std::set<int64_t> froms;
  for (size_t i = 0; i < links.size(); ++i) {
    const auto [from, to] = links[i];
    if (from < 0 || from >= s.vocab || to < 0 || to >= s.vocab)
      return invalid_argument("--chain link {}:{} is outside the vocabulary (0..{})", from, to, s.vocab - 1);
    if (!froms.insert(from).second) return invalid_argument("--chain: token {} leads two links", from);
    (*embed)[from].push_back({static_cast<int64_t>(i), kEmbedValue});
    (*output)[to].push_back({static_cast<int64_t>(i), kOutputValue});
  }
  struct Target {
    std::string_view hf, gguf;
    std::shared_ptr<RowOverrides> rows;
  };
  for (const Target& t : {Target{"model.embed_tokens.weight", "token_embd.weight", embed},
                          Target{"lm_head.weight", "output.weight", output}}) {
    auto w = std::find_if(m.weights.begin(), m.weights.end(), [&](const WeightSpec& x) { return x.name == t.hf; });
    if (w == m.weights.end()) return internal_error("--chain: the model has no {}", t.hf);
    w->overrides = t.rows;
    for (GgufTensorSpec& g : m.gguf_tensors)
      if (g.name == t.gguf)
        g.make_row = [values = WeightValues(*w, m.seed)](int64_t r, float* dst) { values.row(r, dst); };
  }
  return Status::ok_status();
}

}  // namespace cai::mkmodel
