// `cai chat`: an interactive terminal chat with the engine in-process. The whole history goes through the model's chat
// template each turn, so the engine's prefix cache serves what earlier turns already computed.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cai/engine.h"
#include "chat_input.h"
#include "chat_reply.h"
#include "interrupt.h"
#include "server/prompt_builder.h"
#include "verbs.h"

namespace cai::cli {

namespace {

struct ChatOptions {
  CommonOptions common;
  SamplingParams sampling;
  int n_predict = 8192;  // tokens per reply at most; 0 = all the context the prompt leaves
  int ctx_size = 0;      // 0 = the model's context
  std::string chat_template_file;
  std::string system;
};

constexpr const char* kHelp =
    "commands:\n"
    "  /help           this list\n"
    "  /system TEXT    set the system message (empty: none) and clear the history\n"
    "  /reset          clear the history (the system message stays)\n"
    "  /history        the messages so far and the tokens they make\n"
    "  /exit           leave (or Ctrl-D on an empty line)\n"
    "a line ending in \\ continues on the next line; a line starting with \"\"\" opens a multi-line message that a\n"
    "line ending with \"\"\" closes.\n"
    "Ctrl-C stops a reply.\n";

// The conversation and what it takes to render it and answer it.
class ChatSession {
 public:
  ChatSession(Engine& engine, const server::PromptBuilder& builder, const ChatOptions& o)
      : engine_(engine), builder_(builder), o_(o), system_(o.system), styled_out_(isatty(STDOUT_FILENO) == 1),
        styled_err_(isatty(STDERR_FILENO) == 1) {}

  // A line starting with '/'; false when it asks to leave.
  bool command(const std::string& line);
  // One user turn: the message joins the history, the reply streams and joins it too.
  void send(const std::string& text);

 private:
  nlohmann::ordered_json conversation() const;
  void show_history() const;
  void note(const std::string& text) const;  // a status line on stderr, dimmed on a terminal

  Engine& engine_;
  const server::PromptBuilder& builder_;
  const ChatOptions& o_;
  std::string system_;
  nlohmann::ordered_json turns_ = nlohmann::ordered_json::array();  // user and assistant messages
  bool styled_out_, styled_err_;
};

nlohmann::ordered_json ChatSession::conversation() const {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system_.empty()) messages.push_back({{"role", "system"}, {"content", system_}});
  for (const auto& m : turns_) messages.push_back(m);
  return messages;
}

void ChatSession::note(const std::string& text) const {
  const std::string line = styled_err_ ? "\x1b[2m" + text + "\x1b[22m\n" : text + "\n";
  std::fflush(stdout);
  std::fputs(line.c_str(), stderr);
}

void ChatSession::show_history() const {
  const nlohmann::ordered_json messages = conversation();
  for (const auto& m : messages)
    std::printf("%s: %s\n", m["role"].get_ref<const std::string&>().c_str(),
                m["content"].get_ref<const std::string&>().c_str());
  Result<server::BuiltPrompt> built = builder_.chat(messages);
  if (built.ok())
    note(fmt::format("[{} message{}, {} tokens with the reply's opening]", messages.size(),
                     messages.size() == 1 ? "" : "s", built.value().tokens.size()));
  else
    note("error: " + built.status().to_string());
}

bool ChatSession::command(const std::string& line) {
  const size_t space = line.find_first_of(" \t\n");
  const std::string name = line.substr(0, space);
  const size_t arg_at = line.find_first_not_of(" \t\n", std::min(space, line.size()));
  const std::string arg = arg_at == std::string::npos ? "" : line.substr(arg_at);
  if (name == "/exit" || name == "/quit") return false;
  if (name == "/help") {
    std::fputs(kHelp, stdout);
  } else if (name == "/reset") {
    turns_ = nlohmann::ordered_json::array();
    note("[history cleared]");
  } else if (name == "/system") {
    system_ = arg;
    turns_ = nlohmann::ordered_json::array();
    note(system_.empty() ? "[no system message; history cleared]" : "[system message set; history cleared]");
  } else if (name == "/history") {
    show_history();
  } else {
    note(fmt::format("unknown command {}; /help lists the commands", name));
  }
  return true;
}

void ChatSession::send(const std::string& text) {
  turns_.push_back({{"role", "user"}, {"content", text}});
  Status st = [&]() -> Status {
    CAI_ASSIGN_OR_RETURN(server::BuiltPrompt built, builder_.chat(conversation()));
    const int n_prompt = static_cast<int>(built.tokens.size()), n_ctx = engine_.ctx_size();
    if (n_prompt >= n_ctx)
      return invalid_argument("the conversation is {} tokens and the context holds {}: /reset to start over", n_prompt,
                              n_ctx);
    GenerationRequest req;
    req.prompt = std::move(built.tokens);
    req.prompt_opens_think = built.opens_think;
    req.sampling = o_.sampling;
    req.max_tokens = o_.n_predict > 0 ? std::min(o_.n_predict, n_ctx - n_prompt) : n_ctx - n_prompt;
    CAI_ASSIGN_OR_RETURN(ReplyResult reply, stream_reply(engine_, std::move(req), styled_out_));
    turns_.push_back({{"role", "assistant"}, {"content", reply.content}});
    const char* end = reply.finish == FinishReason::kCancelled ? ", stopped"
                      : reply.finish == FinishReason::kLength  ? ", at the token limit"
                                                               : "";
    note(fmt::format("[{} prompt tokens ({} cached), {} generated in {:.2f} s{}]", reply.n_prompt_tokens,
                     reply.n_cached_prompt_tokens, reply.n_generated_tokens, reply.seconds, end));
    return {};
  }();
  if (!st.ok()) {
    turns_.erase(turns_.size() - 1);  // the message that got no reply
    note("error: " + st.to_string());
  }
}

Status chat(const ChatOptions& o) {
  // Threads started while loading inherit a blocked SIGINT, so Ctrl-C reaches this thread and its read() of the
  // terminal; a Ctrl-C during the load still ends the process when it is unblocked below.
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigint, nullptr);
  std::string template_source;
  if (!o.chat_template_file.empty()) {
    CAI_ASSIGN_OR_RETURN(template_source, read_text_file(o.chat_template_file, "chat template file"));
  }
  EngineOptions engine_options;
  engine_options.max_batch = 1;
  engine_options.ctx_size = o.ctx_size;
  CAI_ASSIGN_OR_RETURN(LoadedModel lm, open_model(o.common, 0, 0, &engine_options));
  if (!lm.tokenizer) return not_found("model {} has no tokenizer; `cai chat` needs one", o.common.model);
  if (template_source.empty()) template_source = lm.tokenizer->chat_template();
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(std::move(lm), engine_options));
  const Tokenizer& tok = *engine->model().tokenizer;
  CAI_ASSIGN_OR_RETURN(server::PromptBuilder builder, server::PromptBuilder::create(tok, template_source));
  pthread_sigmask(SIG_UNBLOCK, &sigint, nullptr);
  catch_interrupts();

  const bool interactive = isatty(STDIN_FILENO) == 1;
  if (interactive) {
    std::fprintf(stderr, "cai chat: %s, context %d tokens%s. /help for commands, /exit or Ctrl-D to leave.\n",
                 o.common.model.c_str(), engine->ctx_size(),
                 builder.has_template() ? "" : " (no chat template: messages are joined by blank lines)");
  }
  ChatSession session(*engine, builder, o);
  ChatInput input(STDIN_FILENO, interactive);
  for (;;) {
    UserInput in = input.next();
    if (in.kind == UserInput::Kind::kEnd) {
      if (interactive) std::fputc('\n', stdout);  // after the prompt Ctrl-D left the cursor on
      break;
    }
    if (in.kind == UserInput::Kind::kInterrupted) {
      std::fputc('\n', stdout);  // after the terminal's "^C"
      std::fflush(stdout);
      std::fputs("(to leave: /exit or Ctrl-D)\n", stderr);
      continue;
    }
    if (in.text.starts_with('/')) {
      if (!session.command(in.text)) break;
    } else {
      session.send(in.text);
    }
  }
  engine->shutdown();
  return {};
}

}  // namespace

void register_chat(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand("chat", "interactive chat in the terminal (the engine in-process)");
  add_common_options(*cmd, o->common);
  add_sampling_options(*cmd, o->sampling);
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens per reply at most (0 = all the context leaves)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("-c,--ctx-size", o->ctx_size, "context size (default: the model's)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--chat-template", o->chat_template_file, "Jinja chat template file replacing the model's");
  cmd->add_option("--system", o->system, "the system message to start with (/system changes it)");
  cmd->callback([o, &exit_code] {
    Status st = chat(*o);
    if (!st.ok()) exit_code = fail(st);
  });
}

}  // namespace cai::cli
