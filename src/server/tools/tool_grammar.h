// Forced tool calls: for tool_choice "required" or a named function, the grammar that makes the answer a valid call
// (or several, with parallel_tool_calls) in the model's syntax, arguments matching each function's parameters.
#pragma once

#include <memory>

#include "runtime/grammar/grammar.h"
#include "server/tools/tool_calls.h"
#include "server/tools/tool_prompt.h"

namespace cai::server {

// Null unless `offer` requires a call. A function whose parameters schema the grammar cannot express is
// kInvalidArgument: where the request holds that schema (offer.schema_paths, else "tools[i].function.parameters"),
// then the compiler's message naming the keyword (a 400).
Result<std::shared_ptr<const grammar::Grammar>> forced_tool_grammar(ToolSyntax syntax, const ToolOffer& offer,
                                                                    bool parallel);

}  // namespace cai::server
