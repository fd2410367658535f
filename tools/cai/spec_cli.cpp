// The speculative-decoding options of the verbs that generate (serve, eval, bench).
#include "verbs.h"

namespace cai::cli {

void add_spec_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--spec", o.spec_method,
                 "speculative decoding: off, ngram (prompt lookup in the sequence's own tokens), mtp (DeepSeek-V3/R1's "
                 "multi-token-prediction module, loaded from the model file), draft (a smaller model, --draft-model)")
      ->capture_default_str();
  cmd.add_option("--spec-tokens", o.spec.tokens, "draft tokens verified per step and sequence")->capture_default_str();
  cmd.add_option("--spec-ngram-min", o.spec.ngram_min, "prompt lookup: the shortest suffix matched")
      ->capture_default_str();
  cmd.add_option("--spec-ngram-max", o.spec.ngram_max, "prompt lookup: the longest suffix matched (tried first)")
      ->capture_default_str();
  cmd.add_option("--spec-max-batch", o.spec.max_batch,
                 "serve: draft only while at most this many sequences run (0 = always); verification costs what it "
                 "computes where a full batch keeps the device busy already")
      ->capture_default_str();
  cmd.add_option("--draft-model", o.spec.draft_model,
                 "--spec draft: a .gguf file or HF directory with the same vocabulary");
  cmd.add_option("--draft-device", o.draft_device,
                 "--spec draft: the draft model's device (default: the model's first)");
}

Result<SpecOptions> spec_options(const CommonOptions& o) {
  SpecOptions s = o.spec;
  CAI_ASSIGN_OR_RETURN(s.method, parse_spec_method(o.spec_method));
  CAI_TRY(validate(s));
  if (s.method == SpecMethod::kDraft && s.draft_model.empty())
    return invalid_argument("--spec draft needs --draft-model PATH");
  return s;
}

Result<LoadedModel> load_draft_model(const CommonOptions& o, const LoadedModel& target) {
  CAI_ASSIGN_OR_RETURN(const SpecOptions spec, spec_options(o));
  if (spec.method != SpecMethod::kDraft) return LoadedModel{};
  hal::Device* device = &target.model->device();
  if (!o.draft_device.empty()) {
    CAI_ASSIGN_OR_RETURN(device, hal::Registry::global().find_device(o.draft_device));
  }
  CAI_ASSIGN_OR_RETURN(LoadedModel draft, load_model(spec.draft_model, *device));
  if (target.tokenizer && draft.tokenizer) {
    const Tokenizer &a = *target.tokenizer, &b = *draft.tokenizer;
    if (a.n_vocab() != b.n_vocab())
      return invalid_argument("--draft-model {}: its tokenizer has {} tokens, the model's {}", spec.draft_model,
                              b.n_vocab(), a.n_vocab());
    for (int32_t t = 0; t < a.n_vocab(); ++t)
      if (a.token_text(t) != b.token_text(t))
        return invalid_argument(
            "--draft-model {}: token {} is '{}' there and '{}' in the model: the vocabularies "
            "differ",
            spec.draft_model, t, b.token_text(t), a.token_text(t));
  }
  return draft;
}

}  // namespace cai::cli
