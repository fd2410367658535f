// make_drafter: the drafter a SpecOptions names, for a main KV cache of a given shape.
#pragma once

#include <memory>

#include "model/model.h"
#include "runtime/spec/drafter.h"
#include "runtime/spec/spec_options.h"

namespace cai {

// Null when speculation is off. `draft_model`: the loaded --draft-model (kDraft; it must outlive the drafter). Errors:
// invalid numbers (validate), mtp on a model loaded without its module, draft without a draft model or with another
// vocabulary.
Result<std::unique_ptr<Drafter>> make_drafter(Model& model, const SpecOptions& spec, int n_blocks, int block_size,
                                              Model* draft_model);

}  // namespace cai
