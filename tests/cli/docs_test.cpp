// The documentation holds together: the README stays a short front door, every relative link in README.md and docs/
// reaches a file (and heading) in the repository, every `*.md` a source comment cites exists, nothing points outside
// the repository, and docs/cli.md names every flag `cai --help` and each verb's `--help` list.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_help.h"
#include "test_paths.h"

namespace cai {
namespace {

namespace fs = std::filesystem;

const fs::path& repo() {
  static const fs::path root = fs::canonical(test::source_path(""));
  return root;
}

// README.md and every Markdown page under docs/.
std::vector<fs::path> doc_pages() {
  std::vector<fs::path> pages = {repo() / "README.md"};
  for (const auto& e : fs::recursive_directory_iterator(repo() / "docs"))
    if (e.is_regular_file() && e.path().extension() == ".md") pages.push_back(e.path());
  return pages;
}

// GitHub's anchor of a heading: lower case, punctuation dropped except '-' and '_', spaces to '-'.
std::string anchor_of(const std::string& heading) {
  std::string a;
  for (unsigned char c : heading) {
    if (c >= 0x80 || std::isalnum(c) || c == '-' || c == '_')
      a += static_cast<char>(std::tolower(c));
    else if (c == ' ')
      a += '-';
  }
  return a;
}

std::set<std::string> anchors_in(const fs::path& page) {
  std::set<std::string> anchors;
  std::ifstream in(page);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || line.empty() || line[0] != '#') continue;
    const size_t text = line.find_first_not_of('#');
    if (text == std::string::npos || line[text] != ' ') continue;
    const std::string a = anchor_of(line.substr(text + 1));
    std::string unique = a;
    for (int n = 1; anchors.count(unique); ++n) unique = a + "-" + std::to_string(n);
    anchors.insert(unique);
  }
  return anchors;
}

bool inside_repo(const fs::path& p) {
  const std::string full = fs::weakly_canonical(p).string();
  return full == repo().string() || full.rfind(repo().string() + "/", 0) == 0;
}

// "" when `target` (a link target or cited path, maybe with #anchor) resolves from `base_dir`, else what is wrong.
std::string check_target(const fs::path& base_dir, const std::string& target) {
  const size_t hash = target.find('#');
  const std::string file = target.substr(0, hash);
  const fs::path p = file.empty() ? fs::path() : base_dir / file;
  if (!file.empty() && !inside_repo(p)) return "points outside the repository";
  if (!file.empty() && !fs::exists(p)) return "no such file";
  if (hash == std::string::npos || !(file.empty() || p.extension() == ".md")) return "";
  if (file.empty()) return "";  // same-page anchors are checked by the caller
  return anchors_in(p).count(target.substr(hash + 1)) ? "" : "no such heading in " + file;
}

TEST(Docs, ReadmeIsAShortFrontDoor) {
  std::ifstream in(repo() / "README.md");
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  EXPECT_LE(lines, 250);
  EXPECT_GT(lines, 20);
}

TEST(Docs, EveryRelativeLinkReachesAFileAndHeading) {
  static const std::regex link(R"(\]\(([^)\s]+)\))");
  int checked = 0;
  for (const fs::path& page : doc_pages()) {
    const std::string text = test::read_file(page.string());
    const std::set<std::string> own = anchors_in(page);
    for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
      const std::string target = (*it)[1];
      if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 || target.rfind("mailto:", 0) == 0)
        continue;
      ++checked;
      std::string problem = check_target(page.parent_path(), target);
      if (problem.empty() && target[0] == '#' && !own.count(target.substr(1))) problem = "no such heading";
      EXPECT_EQ(problem, "") << fs::relative(page, repo()).string() << ": (" << target << ")";
    }
  }
  EXPECT_GT(checked, 20);  // the README alone links a dozen pages
}

TEST(Docs, NoPageOrCommentPointsOutsideTheRepository) {
  static const std::regex outside(R"((\.\./shared|/work/|\.\./\.library))");
  std::vector<fs::path> files = doc_pages();
  for (const char* dir : {"src", "tools", "tests", "include", "bench", "scripts", "deploy", "data", "cmake"})
    for (const auto& e : fs::recursive_directory_iterator(repo() / dir))
      if (e.is_regular_file() && e.path().string().find("/tests/data/") == std::string::npos &&
          e.file_size() < (1 << 20) && e.path().extension() != ".gguf")
        files.push_back(e.path());
  for (const fs::path& f : files) {
    const std::string text = test::read_file(f.string());
    std::smatch m;
    if (f.filename() == "docs_test.cpp") continue;  // this test names the patterns
    EXPECT_FALSE(std::regex_search(text, m, outside)) << fs::relative(f, repo()).string() << ": " << m.str();
  }
}

// Where a line's comment starts ("//", "/*", a block comment's leading "*", or "#" in shell / CMake / YAML), or npos.
size_t comment_start(const std::string& line, bool hash_comments) {
  const size_t first = line.find_first_not_of(' ');
  if (first == std::string::npos) return first;
  if (hash_comments) return line.find('#');
  if (line[first] == '*') return first;
  const size_t slashes = line.find("//");
  return slashes != std::string::npos ? slashes : line.find("/*");
}

// A source comment cites a page as docs/<page>.md or docs/<page>.md#anchor (from the repository root), or a README.md
// / other .md beside it or under the repository root.
TEST(Docs, EveryCitedPageExists) {
  static const std::regex cited(R"(([A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)(#[a-z0-9_-]+)?)");
  int checked = 0;
  for (const char* dir : {"src", "tools", "tests", "include", "bench", "scripts", "deploy", "cmake"})
    for (const auto& e : fs::recursive_directory_iterator(repo() / dir)) {
      const fs::path& f = e.path();
      if (!e.is_regular_file() || f.string().find("/tests/data/") != std::string::npos) continue;
      const std::string ext = f.extension().string();
      if (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".c" && ext != ".sh" && ext != ".mjs" &&
          ext != ".cmake" && ext != ".yaml" && ext != ".hpp")
        continue;
      const bool hash_comments = ext == ".sh" || ext == ".cmake" || ext == ".yaml";
      std::ifstream in(f);
      for (std::string line; std::getline(in, line);) {
        const size_t at = comment_start(line, hash_comments);
        if (at == std::string::npos) continue;
        const std::string comment = line.substr(at);
        for (std::sregex_iterator it(comment.begin(), comment.end(), cited), end; it != end; ++it) {
          const std::string target = (*it)[0];
          ++checked;
          const std::string from_root = check_target(repo(), target);
          const std::string from_here = check_target(f.parent_path(), target);
          EXPECT_TRUE(from_root.empty() || from_here.empty())
              << fs::relative(f, repo()).string() << " cites " << target << ": " << from_root;
        }
      }
    }
  EXPECT_GT(checked, 10);
}

TEST(Docs, CliPageNamesEveryFlagOfEveryVerb) {
  const std::string page = test::read_file((repo() / "docs/cli.md").string());
  const std::vector<std::string>& verbs = test::cai_verbs();
  ASSERT_GE(verbs.size(), 8u);
  for (const std::string& verb : verbs) {
    EXPECT_NE(page.find("cai " + verb), std::string::npos) << "docs/cli.md never shows `cai " << verb << "`";
    const std::set<std::string>& flags = test::verb_flags(verb);
    EXPECT_GE(flags.size(), 2u) << verb;
    for (const std::string& flag : flags) {
      // A flag counts as documented where it appears whole: not as the start of a longer flag.
      const std::regex whole("(^|[^A-Za-z0-9-])" + flag + "([^A-Za-z0-9-]|$)");
      EXPECT_TRUE(std::regex_search(page, whole)) << "docs/cli.md does not name `cai " << verb << " " << flag << "`";
    }
  }
}

}  // namespace
}  // namespace cai
