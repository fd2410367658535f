// The verbs and flags `cai --help` and each verb's `--help` list: what docs/cli.md must cover and what a command in
// the README may use.
#pragma once

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "test_paths.h"

namespace cai::test {

// The verbs under "Subcommands:" in `cai --help` (read once per test process).
inline const std::vector<std::string>& cai_verbs() {
  static const std::vector<std::string> verbs = [] {
    const std::string help = run_command(cai_bin() + " --help").out;
    std::vector<std::string> out;
    const size_t at = help.find("Subcommands:");
    if (at == std::string::npos) return out;
    static const std::regex line(R"(\n  ([a-z]+) )");
    for (std::sregex_iterator it(help.begin() + static_cast<std::ptrdiff_t>(at), help.end(), line), end; it != end;
         ++it)
      out.push_back((*it)[1]);
    return out;
  }();
  return verbs;
}

// Every flag an options list names ("-m,--model TEXT", "--repack,--no-repack{false}"), from a `--help` text: the names
// that start an option line or follow a comma in it.
inline std::set<std::string> help_flags(const std::string& help) {
  std::set<std::string> flags;
  static const std::regex option_line(R"(\n  (-[^ \n]+))");
  static const std::regex name(R"(--?[A-Za-z][A-Za-z0-9-]*)");
  for (std::sregex_iterator it(help.begin(), help.end(), option_line), end; it != end; ++it) {
    const std::string names = (*it)[1];
    for (std::sregex_iterator n(names.begin(), names.end(), name); n != end; ++n) flags.insert((*n)[0]);
  }
  return flags;
}

// The flags of `cai VERB --help` ("" = `cai --help`), each verb's help read once per test process.
inline const std::set<std::string>& verb_flags(const std::string& verb) {
  static std::map<std::string, std::set<std::string>> read;
  auto it = read.find(verb);
  if (it == read.end())
    it =
        read.emplace(verb, help_flags(run_command(cai_bin() + (verb.empty() ? "" : " " + verb) + " --help").out)).first;
  return it->second;
}

}  // namespace cai::test
