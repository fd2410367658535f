// `cai tokenize --jsonl` (the contract outside checks use) reproduces the reference ids of every tokenizer case file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "test_paths.h"

namespace cai {
namespace {

class TokenizeCli : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizeCli, JsonlMatchesReferenceIds) {
  const std::string dir = test::data_path("tokenizer/" + GetParam());
  test::CommandResult r = test::run_command(test::binary_path("cai") + " tokenize -m " + dir +
                                            "/tokenizer.json --jsonl " + dir + "/cases.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream want(test::read_file(dir + "/cases.jsonl")), got(r.out);
  std::string w, g;
  int n = 0;
  while (std::getline(want, w)) {
    if (w.empty()) continue;
    ASSERT_TRUE(static_cast<bool>(std::getline(got, g))) << "missing output line " << n;
    const auto wj = nlohmann::json::parse(w), gj = nlohmann::json::parse(g);
    EXPECT_EQ(gj["text"], wj["text"]);
    EXPECT_EQ(gj["ids"], wj["ids"]) << wj["text"];
    ++n;
  }
  EXPECT_GE(n, 50);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, TokenizeCli, ::testing::Values("deepseek-v3", "qwen2", "llama3"));

}  // namespace
}  // namespace cai
