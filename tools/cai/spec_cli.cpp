// The speculative-decoding options of the verbs that generate (serve, eval, bench).
#include "verbs.h"

namespace cai::cli {

void add_spec_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--spec", o.spec_method,
                 "speculative decoding: off, ngram (prompt lookup in the sequence's own tokens), mtp (DeepSeek-V3/R1's "
                 "multi-token-prediction module, loaded from the model file), draft (a smaller model, --draft-model)")
      ->capture_default_str();
  cmd.add_option("--spec-tokens", o.spec.tokens, "draft tokens verified per step and sequence")
      ->capture_default_str();
  cmd.add_option("--spec-ngram-min", o.spec.ngram_min, "prompt lookup: the shortest suffix matched")
      ->capture_default_str();
  cmd.add_option("--spec-ngram-max", o.spec.ngram_max, "prompt lookup: the longest suffix matched (tried first)")
      ->capture_default_str();
  cmd.add_option("--draft-model", o.spec.draft_model,
                 "--spec draft: a .gguf file or HF directory with the same vocabulary, run on the first device");
}

Result<SpecOptions> spec_options(const CommonOptions& o) {
  SpecOptions s = o.spec;
  CAI_ASSIGN_OR_RETURN(s.method, parse_spec_method(o.spec_method));
  CAI_TRY(validate(s));
  return s;
}

}  // namespace cai::cli
