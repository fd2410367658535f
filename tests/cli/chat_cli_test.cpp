// `cai chat` driven like a person would: in a detached tmux session of fixed size, keys sent with `tmux send-keys`,
// the screen read with `tmux capture-pane`. Every wait polls the screen with a generous deadline (no fixed sleeps).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include "test_paths.h"

namespace cai {
namespace {

constexpr auto kDeadline = std::chrono::seconds(180);
const std::string kTinyStories = "models/TinyStories-656K-Q8_0.gguf";

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  while (!lines.empty() && lines.back().find_first_not_of(' ') == std::string::npos) lines.pop_back();
  return lines;
}

// Runs of white space as one space, none at either end (the screen wraps and pads what the program printed).
std::string squeeze(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// One program in its own tmux server (socket in a temporary directory). The pane's shell prints the exit status and
// stays open, so the test can read it.
class TmuxChat {
 public:
  explicit TmuxChat(const std::string& args) : socket_(test::make_temp_dir("chat_cli") + "/tmux.sock") {
    const std::string program =
        test::binary_path("cai") + " chat " + args + "; echo \"[chat exited with status $?]\"; sleep 3600";
    const test::CommandResult r = tmux("new-session -d -s chat -x 150 -y 50 " + shell_quote(program));
    started_ = r.exit_code == 0;
    EXPECT_TRUE(started_) << "tmux new-session failed (scripts/setup.sh installs tmux): " << r.err;
  }
  ~TmuxChat() { tmux("kill-server"); }

  // The whole pane with its scrollback, wrapped lines joined; `escapes`: with the SGR sequences of text attributes.
  std::string screen(bool escapes = false) const {
    return tmux(std::string("capture-pane -p -J -S -") + (escapes ? " -e" : "") + " -t chat").out;
  }
  void type(const std::string& text) const { tmux("send-keys -t chat -l " + shell_quote(text)); }
  void key(const std::string& name) const { tmux("send-keys -t chat " + name); }
  void line(const std::string& text) const {
    type(text);
    key("Enter");
  }
  // Polls the screen until `done` holds; false at the deadline.
  bool wait_for(const std::function<bool(const std::string&)>& done) const {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (started_ && std::chrono::steady_clock::now() < deadline) {
      if (done(screen())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // Waits for the n-th ">>>" prompt to be shown, empty and last.
  bool wait_for_prompt(int n) const {
    return wait_for([n](const std::string& s) {
      const std::vector<std::string> lines = lines_of(s);
      int prompts = 0;
      for (const std::string& l : lines) prompts += l.starts_with(">>>");
      return prompts == n && !lines.empty() && squeeze(lines.back()) == ">>>";
    });
  }
  bool wait_for_text(const std::string& text) const {
    return wait_for([&](const std::string& s) { return s.find(text) != std::string::npos; });
  }

 private:
  test::CommandResult tmux(const std::string& args) const {
    return test::run_command("env -u TMUX tmux -f /dev/null -S " + shell_quote(socket_) + " " + args);
  }
  std::string socket_;
  bool started_ = false;
};

std::string cai() { return test::binary_path("cai"); }
std::string model() { return test::data_path(kTinyStories); }

// The reply printed after the input line `sent` (the lines up to the "[... prompt tokens" note).
std::string reply_after(const std::string& screen, const std::string& sent) {
  const std::vector<std::string> lines = lines_of(screen);
  std::string reply;
  bool in_reply = false;
  for (const std::string& l : lines) {
    if (in_reply && l.starts_with("[")) break;
    if (in_reply) reply += l + "\n";
    if (l == ">>> " + sent) in_reply = true;
  }
  return reply;
}

struct ReplyNote {
  int prompt = -1, generated = -1;
  bool stopped = false;
};
// Every "[P prompt tokens (C cached), G generated in S s...]" note on the screen, in order.
std::vector<ReplyNote> notes(const std::string& screen) {
  static const std::regex re(R"(\[(\d+) prompt tokens \(\d+ cached\), (\d+) generated in [0-9.]+ s(, stopped)?)");
  std::vector<ReplyNote> out;
  for (std::sregex_iterator it(screen.begin(), screen.end(), re), end; it != end; ++it)
    out.push_back({std::stoi((*it)[1]), std::stoi((*it)[2]), (*it)[3].matched});
  return out;
}

// The prompt tokens (BOS included) of `text` as `cai tokenize` counts them: an independent check of what the chat
// sent (TinyStories has no chat template, so the messages are joined by blank lines).
int tokens_of(const std::string& text) {
  test::CommandResult r = test::run_command(cai() + " tokenize --bos -m " + model() + " -p " + shell_quote(text));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return static_cast<int>(nlohmann::json::parse(r.out)["ids"].size());
}

bool exited_with_zero(const std::string& screen) {
  return screen.find("[chat exited with status 0]") != std::string::npos;
}

TEST(ChatCli, ReplyStreamsEqualsRunAndExitEndsWithZero) {
  TmuxChat chat("-m " + model() + " --temp 0 -n 40");
  ASSERT_TRUE(chat.wait_for_prompt(1)) << chat.screen();
  chat.line("Once upon a time");
  ASSERT_TRUE(chat.wait_for_prompt(2)) << chat.screen();
  const std::string screen = chat.screen();
  const std::string reply = reply_after(screen, "Once upon a time");
  test::CommandResult run =
      test::run_command(cai() + " run -m " + model() + " -p 'Once upon a time' -n 40 --temp 0 2>/dev/null");
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_FALSE(squeeze(reply).empty()) << screen;
  EXPECT_EQ(squeeze(reply), squeeze(run.out)) << screen;
  ASSERT_EQ(notes(screen).size(), 1u) << screen;
  EXPECT_EQ(notes(screen)[0].prompt, tokens_of("Once upon a time"));
  chat.line("/exit");
  EXPECT_TRUE(chat.wait_for([](const std::string& s) { return exited_with_zero(s); })) << chat.screen();
}

TEST(ChatCli, HistorySystemAndResetShapeTheNextPrompt) {
  TmuxChat chat("-m " + model() + " --temp 0 -n 30");
  ASSERT_TRUE(chat.wait_for_prompt(1)) << chat.screen();
  chat.line("Once upon a time");
  ASSERT_TRUE(chat.wait_for_prompt(2)) << chat.screen();
  chat.line("Tom");
  ASSERT_TRUE(chat.wait_for_prompt(3)) << chat.screen();
  std::vector<ReplyNote> n = notes(chat.screen());
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].prompt, tokens_of("Once upon a time"));
  // The second prompt holds the first turn (message and reply) and the new message.
  EXPECT_GT(n[1].prompt, n[0].prompt + n[0].generated);
  chat.line("/history");
  ASSERT_TRUE(chat.wait_for_text("4 messages")) << chat.screen();
  EXPECT_NE(chat.screen().find("user: Once upon a time\nassistant: "), std::string::npos) << chat.screen();
  EXPECT_NE(chat.screen().find("user: Tom\n"), std::string::npos) << chat.screen();

  chat.line("/system Lily liked cats.");
  ASSERT_TRUE(chat.wait_for_text("[system message set; history cleared]")) << chat.screen();
  chat.line("/history");
  ASSERT_TRUE(chat.wait_for_text("[1 message,")) << chat.screen();
  EXPECT_NE(chat.screen().find("/history\nsystem: Lily liked cats.\n[1 message,"), std::string::npos) << chat.screen();
  chat.line("Tom");
  ASSERT_TRUE(chat.wait_for_prompt(7)) << chat.screen();
  n = notes(chat.screen());
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[2].prompt, tokens_of("Lily liked cats.\n\nTom"));

  chat.line("/reset");
  ASSERT_TRUE(chat.wait_for_text("[history cleared]")) << chat.screen();
  chat.line("Tom");
  ASSERT_TRUE(chat.wait_for_prompt(9)) << chat.screen();
  n = notes(chat.screen());
  ASSERT_EQ(n.size(), 4u);
  EXPECT_EQ(n[3].prompt, n[2].prompt);  // the system message stays, the turn before is gone

  chat.line("/system");
  ASSERT_TRUE(chat.wait_for_text("[no system message; history cleared]")) << chat.screen();
  chat.line("Tom");
  ASSERT_TRUE(chat.wait_for_prompt(11)) << chat.screen();
  n = notes(chat.screen());
  ASSERT_EQ(n.size(), 5u);
  EXPECT_EQ(n[4].prompt, tokens_of("Tom"));
}

TEST(ChatCli, MultiLineInputArrivesAsOneMessage) {
  TmuxChat chat("-m " + model() + " --temp 0 -n 8");
  ASSERT_TRUE(chat.wait_for_prompt(1)) << chat.screen();
  chat.line("Once upon\\");
  chat.line("a time");
  ASSERT_TRUE(chat.wait_for_prompt(2)) << chat.screen();
  chat.line(R"(""")");
  chat.line("Lily saw a cat.");
  chat.line("");
  chat.line(R"(Tom saw a dog.""")");
  ASSERT_TRUE(chat.wait_for_prompt(3)) << chat.screen();
  const std::vector<ReplyNote> n = notes(chat.screen());
  ASSERT_EQ(n.size(), 2u) << chat.screen();  // two replies: each block was one message
  EXPECT_EQ(n[0].prompt, tokens_of("Once upon\na time"));
  chat.line("/history");
  ASSERT_TRUE(chat.wait_for_text("[4 messages")) << chat.screen();
  const std::string screen = chat.screen();
  EXPECT_NE(screen.find("user: Once upon\na time\nassistant: "), std::string::npos) << screen;
  EXPECT_NE(screen.find("user: Lily saw a cat.\n\nTom saw a dog.\nassistant: "), std::string::npos) << screen;
}

TEST(ChatCli, CtrlCStopsALongReplyAndTheNextMessageWorks) {
  // A random-weight model with a long context: its replies run for minutes unless stopped (about 100 tokens/s).
  const std::string slow = test::make_temp_dir("chat_cli_model") + "/slow.gguf";
  test::CommandResult mk = test::run_command(test::binary_path("cai-mkmodel") +
                                             " --arch llama --hidden 512 --layers 8 --heads 8 --kv-heads 4 --ffn 1536"
                                             " --vocab 1000 --ctx 8192 --dtype q8_0 --threads 1 -o " +
                                             slow);
  ASSERT_EQ(mk.exit_code, 0) << mk.err;
  constexpr int kMaxReply = 6000;
  TmuxChat chat("-m " + slow + " -t 1 --temp 0 -n " + std::to_string(kMaxReply));
  ASSERT_TRUE(chat.wait_for_prompt(1)) << chat.screen();
  for (const std::string message : {"hello", "hello again"}) {
    chat.line(message);
    // The reply streams: its text is on the screen while it is still being generated (no note after it yet).
    ASSERT_TRUE(chat.wait_for([&](const std::string& s) {
      return squeeze(reply_after(s, message)).size() >= 20 && notes(s).size() < (message == "hello" ? 1u : 2u);
    })) << chat.screen();
    chat.key("C-c");
    ASSERT_TRUE(chat.wait_for_prompt(message == "hello" ? 2 : 3)) << chat.screen();
  }
  const std::vector<ReplyNote> n = notes(chat.screen());
  ASSERT_EQ(n.size(), 2u) << chat.screen();
  for (const ReplyNote& note : n) {
    EXPECT_TRUE(note.stopped) << chat.screen();
    EXPECT_GT(note.generated, 0);
    EXPECT_LT(note.generated, kMaxReply);
  }
  EXPECT_GT(n[1].prompt, n[0].prompt + n[0].generated / 2) << "the stopped reply stays in the history";

  chat.key("C-c");  // at the empty prompt: says how to leave, and stays
  ASSERT_TRUE(chat.wait_for_text("(to leave: /exit or Ctrl-D)")) << chat.screen();
  ASSERT_TRUE(chat.wait_for_prompt(4)) << chat.screen();
  chat.key("C-d");
  EXPECT_TRUE(chat.wait_for([](const std::string& s) { return exited_with_zero(s); })) << chat.screen();
}

// A template that leaves <think> open (as the R1 distills' do): the whole reply is reasoning, dimmed on a terminal and
// plain in a pipe.
TEST(ChatCli, ReasoningIsDimOnATerminalAndPlainInAPipe) {
  const std::string tpl = test::make_temp_dir("chat_cli_tpl") + "/think.jinja";
  {
    std::ofstream out(tpl);
    out << "{% for m in messages %}{{ m.content }}{% endfor %}<think>\n";
  }
  const std::string args = "-m " + model() + " --temp 0 -n 20 --chat-template " + tpl;
  TmuxChat chat(args);
  ASSERT_TRUE(chat.wait_for_prompt(1)) << chat.screen();
  chat.line("Once upon a time");
  ASSERT_TRUE(chat.wait_for_prompt(2)) << chat.screen();
  const std::string plain_reply = squeeze(reply_after(chat.screen(), "Once upon a time"));
  ASSERT_FALSE(plain_reply.empty()) << chat.screen();
  const std::string styled = chat.screen(/*escapes=*/true);
  const size_t dim = styled.find("\x1b[2m"), text = styled.find(plain_reply.substr(0, 10));
  ASSERT_NE(dim, std::string::npos) << styled;
  ASSERT_NE(text, std::string::npos) << styled;
  EXPECT_LT(dim, text) << styled;
  EXPECT_GT(styled.find("\x1b[", dim + 1), text) << "the reply's start is dim\n" << styled;
  chat.line("/history");
  ASSERT_TRUE(chat.wait_for_text("[2 messages")) << chat.screen();
  EXPECT_NE(chat.screen().find("assistant: \n[2 messages"), std::string::npos)
      << "the reasoning is not part of the answer kept in the history\n"
      << chat.screen();

  test::CommandResult piped = test::run_command("printf 'Once upon a time\\n' | " + cai() + " chat " + args);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out.find('\x1b'), std::string::npos) << piped.out;
  EXPECT_EQ(squeeze(piped.out), plain_reply);
}

// Without a terminal: no prompts, no styling; the reply is what `cai run` prints for the same prompt.
TEST(ChatCli, PipedInputPrintsThePlainReply) {
  test::CommandResult piped =
      test::run_command("printf 'Once upon a time\\n' | " + cai() + " chat -m " + model() + " --temp 0 -n 40");
  test::CommandResult run = test::run_command(cai() + " run -m " + model() + " -p 'Once upon a time' -n 40 --temp 0");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(piped.out, run.out + "\n");
}

}  // namespace
}  // namespace cai
