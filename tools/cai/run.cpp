// `cai run`: generate a continuation of one prompt and stream it to stdout.
#include <chrono>
#include <cstdio>

#include "core/log.h"
#include "runtime/sampler.h"
#include "runtime/single_sequence.h"
#include "server/prompt_builder.h"
#include "verbs.h"

namespace cai::cli {

namespace {

struct RunOptions {
  CommonOptions common;
  std::string prompt;
  int n_predict = 128;
  int ctx_size = 0;  // 0 = the model's context length
  bool chat = false;
  std::string system;
  SamplingParams sampling;
};

// The prompt as token ids: raw text (BOS per the model), or one chat turn through the model's chat template.
Result<std::vector<int32_t>> prompt_ids(const RunOptions& o, const Tokenizer& tok) {
  if (!o.chat) return tok.encode(o.prompt, tok.add_bos_default(), /*parse_special=*/true);
  if (tok.chat_template().empty()) return invalid_argument("--chat: model {} has no chat template", o.common.model);
  CAI_ASSIGN_OR_RETURN(server::PromptBuilder builder, server::PromptBuilder::create(tok, tok.chat_template()));
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  messages.push_back({{"role", "user"}, {"content", o.prompt}});
  CAI_ASSIGN_OR_RETURN(server::BuiltPrompt built, builder.chat(messages));
  return built.tokens;
}

Status run(const RunOptions& o) {
  CAI_ASSIGN_OR_RETURN(LoadedModel lm, open_model(o.common, o.ctx_size > 0 ? o.ctx_size : LoadOptions::kModelContext));
  if (!lm.tokenizer) return not_found("model {} has no tokenizer; `cai run` needs one", o.common.model);
  const Tokenizer& tok = *lm.tokenizer;
  CAI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, prompt_ids(o, tok));
  const size_t n_prompt = ids.size();
  if (ids.empty()) return invalid_argument("the prompt encodes to no tokens");
  const int n_ctx = o.ctx_size > 0 ? o.ctx_size : lm.model->config().max_position_embeddings;
  if (static_cast<int>(ids.size()) >= n_ctx)
    return invalid_argument("prompt of {} tokens does not fit the context of {}", ids.size(), n_ctx);
  CAI_ASSIGN_OR_RETURN(SingleSequence seq, SingleSequence::create(*lm.model, n_ctx));
  Sampler sampler(o.sampling);
  Tokenizer::StreamingDecoder decoder(tok, /*skip_special=*/true, /*continues_text=*/true);
  const auto t0 = std::chrono::steady_clock::now();
  CAI_ASSIGN_OR_RETURN(std::vector<float> logits, seq.step(ids, false));
  const auto t1 = std::chrono::steady_clock::now();
  int n_gen = 0;
  for (; n_gen < o.n_predict && seq.n_past() < n_ctx; ++n_gen) {
    const int32_t next = sampler.sample(logits, ids);
    if (tok.is_eog(next)) break;
    ids.push_back(next);
    const std::string piece = decoder.push(next);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (n_gen + 1 == o.n_predict || seq.n_past() >= n_ctx) {
      ++n_gen;
      break;
    }
    CAI_ASSIGN_OR_RETURN(logits, seq.step(std::span<const int32_t>(&next, 1), false));
  }
  const std::string rest = decoder.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fflush(stdout);
  const auto t2 = std::chrono::steady_clock::now();
  const double pp_s = std::chrono::duration<double>(t1 - t0).count(),
               tg_s = std::chrono::duration<double>(t2 - t1).count();
  CAI_LOG_INFO("prompt {} tokens in {:.3f}s; generated {} tokens in {:.3f}s ({:.1f} tok/s)", n_prompt, pp_s, n_gen,
               tg_s, tg_s > 0 ? n_gen / tg_s : 0.0);
  return {};
}

}  // namespace

void register_run(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "generate a continuation of a prompt");
  add_common_options(*cmd, o->common);
  cmd->add_option("-p,--prompt", o->prompt, "prompt text (with --chat: the user message)")->required();
  cmd->add_flag("--chat", o->chat, "wrap the prompt in the model's chat template as one user turn");
  cmd->add_option("--system", o->system, "with --chat: a system message");
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate")->check(CLI::NonNegativeNumber);
  cmd->add_option("-c,--ctx-size", o->ctx_size, "context size (default: the model's)")->check(CLI::NonNegativeNumber);
  add_sampling_options(*cmd, o->sampling);
  cmd->callback([o, &exit_code] {
    Status st = run(*o);
    if (!st.ok()) exit_code = fail(st);
  });
}

}  // namespace cai::cli
