// The README's commands run as written. Its fenced `sh` blocks are read in order, one command per line (a trailing
// backslash continues it):
// - `bash scripts/<name>.sh` must name a script in the repository, and the test command must be what CI runs;
// - `./build/cai VERB ...` runs (with this build's `cai`) and must exit 0 with some output; a `serve` starts in the
//   background and must answer /health with 200 before the next command, and stays up for the commands after it
//   (e.g. a `curl` to it) until the next `serve` or the end;
// - `curl` runs against that server and must print a JSON body without an "error";
// - a `cai VERB ...` (a model the reader downloads first) cannot run here: its verb and every flag must be ones that
//   `cai VERB --help` lists, so the README never shows a flag that does not exist. The same holds for every `cai`
//   command the runnable lines contain.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli_help.h"
#include "test_paths.h"

namespace cai {
namespace {

struct Block {
  bool server = false;  // ```sh server: every command in it is a long-running server
  std::vector<std::string> commands;
};

std::vector<Block> readme_sh_blocks() {
  std::ifstream in(test::source_path("README.md"));
  std::vector<Block> blocks;
  Block* open = nullptr;
  std::string pending;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      if (open) {
        open = nullptr;
      } else if (line == "```sh" || line == "```sh server") {
        blocks.push_back({line == "```sh server", {}});
        open = &blocks.back();
      } else {
        blocks.push_back({});  // another language: a placeholder that is never run
        open = nullptr;
        for (std::string skip; std::getline(in, skip) && skip.rfind("```", 0) != 0;) {}
      }
      continue;
    }
    if (!open) continue;
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1);
      continue;
    }
    open->commands.push_back(pending + line);
    pending.clear();
  }
  return blocks;
}

// Shell words, with '...' and "..." quotes removed (enough for the README's commands).
std::vector<std::string> words(const std::string& cmd) {
  std::vector<std::string> out;
  std::string w;
  bool any = false;
  for (size_t i = 0; i < cmd.size(); ++i) {
    const char c = cmd[i];
    if (c == '\'' || c == '"') {
      const size_t close = cmd.find(c, i + 1);
      w += cmd.substr(i + 1, close - i - 1);
      i = close == std::string::npos ? cmd.size() : close;
      any = true;
    } else if (c == ' ') {
      if (any) out.push_back(w);
      w.clear();
      any = false;
    } else {
      w += c;
      any = true;
    }
  }
  if (any) out.push_back(w);
  return out;
}

bool is_cai(const std::string& w) { return w == "cai" || w == "./build/cai" || w == "build/cai"; }

// Checks the `cai VERB flags...` inside a command line against `cai VERB --help`; returns how many it checked.
int check_cai_flags(const std::string& cmd) {
  const std::vector<std::string> w = words(cmd);
  int checked = 0;
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (!is_cai(w[i])) continue;
    const std::string verb = w[i + 1];
    const std::vector<std::string>& verbs = test::cai_verbs();
    EXPECT_NE(std::find(verbs.begin(), verbs.end(), verb), verbs.end()) << "no verb `cai " << verb << "`: " << cmd;
    const std::set<std::string>& flags = test::verb_flags(verb);
    for (size_t j = i + 2; j < w.size() && w[j] != "&&" && w[j] != "|"; ++j) {
      if (w[j].size() > 1 && w[j][0] == '-' && !std::isdigit(static_cast<unsigned char>(w[j][1]))) {
        EXPECT_TRUE(flags.count(w[j])) << "`cai " << verb << "` has no flag " << w[j] << ": " << cmd;
      }
    }
    ++checked;
  }
  return checked;
}

// A `cai serve` started in the background, stopped when replaced or destroyed.
class Server {
 public:
  ~Server() { stop(); }
  // Runs `cmd` in `dir` and waits for its /health.
  void start(const std::string& dir, const std::string& cmd, int port) {
    stop();
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      const std::string line = "cd '" + dir + "' && exec " + cmd + " >/dev/null 2>&1";
      execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 600 && !healthy(port); ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(pid_ > 0 && healthy(port)) << "no healthy server on port " << port << " from: " << cmd;
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  static bool healthy(int port) {
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/health";
    return test::run_command("curl -s -o /dev/null -w '%{http_code}' " + url).out == "200";
  }
  pid_t pid_ = -1;
};

int port_of(const std::vector<std::string>& w) {
  for (size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i] == "--port") return std::stoi(w[i + 1]);
  return 8000;  // cai serve's default
}

// The command with `./build/cai` replaced by this build's binary (the README runs from the repository root).
std::string with_this_build(std::string cmd) {
  for (size_t at; (at = cmd.find("./build/cai ")) != std::string::npos;) cmd.replace(at, 11, test::cai_bin());
  return cmd;
}

TEST(Readme, CommandsRunAsWritten) {
  const std::vector<Block> blocks = readme_sh_blocks();
  const std::string repo = test::source_path("");
  Server server;
  int ran = 0, served = 0, flag_checked = 0, scripts = 0;
  for (const Block& b : blocks) {
    for (std::string cmd : b.commands) {
      SCOPED_TRACE(cmd);
      flag_checked += check_cai_flags(cmd);
      // `bash scripts/x.sh [&& rest]`: the script exists; the rest runs as its own command.
      while (cmd.rfind("bash scripts/", 0) == 0) {
        const std::vector<std::string> w = words(cmd);
        EXPECT_TRUE(std::filesystem::exists(repo + "/" + w[1])) << w[1];
        if (w[1] == "scripts/test.sh") {
          EXPECT_NE(test::read_file(repo + "/.ci/run").find("scripts/test.sh"), std::string::npos);
        }
        ++scripts;
        const size_t rest = cmd.find("&& ");
        cmd = rest == std::string::npos ? "" : cmd.substr(rest + 3);
      }
      if (cmd.empty()) continue;
      const std::vector<std::string> w = words(cmd);
      if (w[0] == "./build/cai" && w.size() > 1 && w[1] == "serve") {
        server.start(repo, with_this_build(cmd), port_of(w));
        ++served;
      } else if (w[0] == "./build/cai" || w[0] == "curl") {
        EXPECT_FALSE(b.server) << "a server block holds only servers";
        const test::CommandResult r = test::run_command("cd '" + repo + "' && timeout 300 " + with_this_build(cmd));
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_FALSE(r.out.empty());
        if (w[0] == "curl") {
          const nlohmann::json body = nlohmann::json::parse(r.out, nullptr, false);
          EXPECT_FALSE(body.is_discarded() || body.contains("error")) << r.out;
        }
        ++ran;
      }
    }
  }
  // The front door's two commands, the built-in model's examples, a server and a request to it.
  EXPECT_EQ(scripts, 2);
  EXPECT_GE(served, 2);
  EXPECT_GE(ran, 4);
  EXPECT_GE(flag_checked, 10);
}

}  // namespace
}  // namespace cai
