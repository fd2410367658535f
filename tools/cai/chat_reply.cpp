// One `cai chat` reply: engine events polled on this thread (so Ctrl-C is noticed within kPoll), printed as they come.
#include "chat_reply.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string_view>

#include "interrupt.h"
#include "server/generation.h"
#include "tokenizer/reasoning_parser.h"

namespace cai::cli {

namespace {

constexpr std::chrono::milliseconds kPoll{50};
constexpr std::string_view kDim = "\x1b[2m", kUndim = "\x1b[22m";

// Writes the reply's text to stdout: reasoning (dimmed when styled), then a blank line, then the answer.
class ReplyPrinter {
 public:
  ReplyPrinter(bool prompt_opens_think, bool styled) : parser_(prompt_opens_think), styled_(styled) {}

  // Returns the answer text of this piece.
  std::string push(std::string_view text) { return print(parser_.push(text)); }
  std::string finish() {
    std::string content = print(parser_.finish());
    if (dimmed_) write(kUndim);
    if (last_ != '\n' && last_ != '\0') write("\n");
    std::fflush(stdout);
    return content;
  }

 private:
  std::string print(ReasoningDelta d) {
    if (!d.reasoning.empty()) {
      if (styled_ && !dimmed_) {
        write(kDim);
        dimmed_ = true;
      }
      write(d.reasoning);
      in_reasoning_ = true;
    }
    if (!d.content.empty()) {
      if (dimmed_) {
        write(kUndim);
        dimmed_ = false;
      }
      if (in_reasoning_) {  // a blank line between the reasoning and the answer
        write(last_ == '\n' ? "\n" : "\n\n");
        in_reasoning_ = false;
      }
      write(d.content);
    }
    std::fflush(stdout);
    return std::move(d.content);
  }
  void write(std::string_view s) {
    if (s.empty()) return;
    std::fwrite(s.data(), 1, s.size(), stdout);
    if (s != kDim && s != kUndim) last_ = s.back();
  }

  ReasoningParser parser_;
  bool styled_;
  bool dimmed_ = false;
  bool in_reasoning_ = false;  // reasoning was printed and no answer since
  char last_ = '\0';           // the last character printed ('\0': none yet)
};

}  // namespace

Result<ReplyResult> stream_reply(Engine& engine, GenerationRequest request, bool styled) {
  const auto t0 = std::chrono::steady_clock::now();
  ReplyPrinter printer(request.prompt_opens_think, styled);
  auto channel = std::make_shared<server::EventChannel>();
  CAI_ASSIGN_OR_RETURN(const uint64_t id,
                       engine.submit(std::move(request), [channel](const StreamEvent& ev) { channel->push(ev); }));
  ReplyResult out;
  Status error;
  bool cancelled = false;
  while (out.finish == FinishReason::kNone) {
    if (!cancelled && take_interrupt()) {
      engine.cancel(id);
      cancelled = true;
    }
    for (const StreamEvent& ev : channel->wait(kPoll)) {
      out.content += printer.push(ev.text);
      if (ev.finish == FinishReason::kNone) continue;
      out.finish = ev.finish;
      out.n_prompt_tokens = ev.n_prompt_tokens;
      out.n_cached_prompt_tokens = ev.n_cached_prompt_tokens;
      out.n_generated_tokens = ev.n_generated_tokens;
      if (ev.finish == FinishReason::kError)
        error = Status(ev.error_code == StatusCode::kOk ? StatusCode::kInternal : ev.error_code, ev.error);
    }
  }
  out.content += printer.finish();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!error.ok()) return error;
  return out;
}

}  // namespace cai::cli
