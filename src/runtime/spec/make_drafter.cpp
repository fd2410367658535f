// make_drafter: one switch over the methods.
#include "runtime/spec/make_drafter.h"

#include "runtime/spec/mtp_drafter.h"
#include "runtime/spec/ngram_drafter.h"

namespace cai {

Result<std::unique_ptr<Drafter>> make_drafter(Model& model, const SpecOptions& spec, int n_blocks, int block_size) {
  CAI_TRY(validate(spec));
  switch (spec.method) {
    case SpecMethod::kOff: return std::unique_ptr<Drafter>();
    case SpecMethod::kNgram: return std::unique_ptr<Drafter>(new NgramDrafter(spec.ngram_min, spec.ngram_max));
    case SpecMethod::kMtp: {
      CAI_ASSIGN_OR_RETURN(std::unique_ptr<MtpDrafter> d, MtpDrafter::create(model, n_blocks, block_size));
      return std::unique_ptr<Drafter>(std::move(d));
    }
    case SpecMethod::kDraft: break;
  }
  return unsupported("--spec draft: not available in this build yet");
}

}  // namespace cai
