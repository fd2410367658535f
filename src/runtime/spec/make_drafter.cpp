// make_drafter: one switch over the methods.
#include "runtime/spec/make_drafter.h"

#include "runtime/spec/draft_model_drafter.h"
#include "runtime/spec/mtp_drafter.h"
#include "runtime/spec/ngram_drafter.h"

namespace cai {

Result<std::unique_ptr<Drafter>> make_drafter(Model& model, const SpecOptions& spec, int n_blocks, int block_size,
                                              Model* draft_model) {
  CAI_TRY(validate(spec));
  switch (spec.method) {
    case SpecMethod::kOff: return std::unique_ptr<Drafter>();
    case SpecMethod::kNgram: return std::unique_ptr<Drafter>(new NgramDrafter(spec.ngram_min, spec.ngram_max));
    case SpecMethod::kMtp: {
      CAI_ASSIGN_OR_RETURN(std::unique_ptr<MtpDrafter> d, MtpDrafter::create(model, n_blocks, block_size));
      return std::unique_ptr<Drafter>(std::move(d));
    }
    case SpecMethod::kDraft: {
      if (!draft_model) return invalid_argument("--spec draft: no draft model was loaded (--draft-model PATH)");
      CAI_ASSIGN_OR_RETURN(std::unique_ptr<DraftModelDrafter> d,
                           DraftModelDrafter::create(*draft_model, model.config().vocab_size, n_blocks, block_size));
      return std::unique_ptr<Drafter>(std::move(d));
    }
  }
  return internal_error("unknown speculative method");
}

}  // namespace cai
