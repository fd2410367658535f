// Split GGUF (tests/data/quants/split: Q8_0.gguf cut in 3 by llama-gguf-split): opened from its first part it is
// Q8_0.gguf tensor for tensor and logit for logit; missing, foreign or miscounted parts are errors naming the file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "model/loaders/gguf.h"
#include "test_paths.h"

namespace cai {
namespace {

namespace fs = std::filesystem;

std::string part(int i) { return test::data_path("quants/split/Q8_0-0000" + std::to_string(i) + "-of-00003.gguf"); }
std::string dest(const std::string& dir, int i) { return dir + "/Q8_0-0000" + std::to_string(i) + "-of-00003.gguf"; }

// A temp folder holding the parts; parts[k] is the source of part k + 1 (0 = leave that part out).
std::string copy_parts(std::initializer_list<int> parts) {
  const std::string dir = test::make_temp_dir("split");
  int i = 1;
  for (int src : parts) {
    if (src != 0) fs::copy_file(part(src), dest(dir, i));
    ++i;
  }
  return dir;
}

void expect_error_naming(const std::string& path, const std::string& named, const std::string& needle) {
  Result<std::unique_ptr<GgufFile>> r = GgufFile::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(named), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(GgufSplit, FirstPartOpensAllPartsAsOneFile) {
  auto split = GgufFile::open(part(1));
  auto whole = GgufFile::open(test::data_path("quants/Q8_0.gguf"));
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  EXPECT_EQ((*split)->mapped_files().size(), 3u);
  ASSERT_EQ((*split)->tensors().size(), 12u);
  ASSERT_EQ((*whole)->tensors().size(), 12u);
  for (const GgufTensorInfo& w : (*whole)->tensors()) {
    const GgufTensorInfo* s = (*split)->find(w.name);
    ASSERT_NE(s, nullptr) << w.name;
    EXPECT_EQ(s->dtype, w.dtype) << w.name;
    EXPECT_EQ(s->ne, w.ne) << w.name;
    ASSERT_EQ(s->n_bytes, w.n_bytes) << w.name;
    EXPECT_EQ(std::memcmp(s->data, w.data, w.n_bytes), 0) << w.name;
  }
  for (const auto& [key, value] : (*whole)->metadata().items()) EXPECT_EQ((*split)->metadata().at(key), value) << key;
}

// `cai eval` on the first part: bit-identical logits to the unsplit file (tokens 1..8, as in
// tests/data/quants/README.md).
TEST(GgufSplit, CaiEvalOnTheFirstPartGivesTheLogitsOfTheWholeFile) {
  const std::string dir = test::make_temp_dir("split-eval");
  std::vector<std::vector<float>> logits;
  for (const std::string& model : {part(1), test::data_path("quants/Q8_0.gguf")}) {
    test::CommandResult r = test::run_command(test::binary_path("cai") + " eval -t 1 -m " + model +
                                              " --tokens 1,2,3,4,5,6,7,8 --logits " + dir + "/l.f32 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    logits.push_back(test::read_f32(dir + "/l.f32"));
  }
  ASSERT_EQ(logits[0].size(), 8u * 264u);
  EXPECT_EQ(logits[0], logits[1]);
}

TEST(GgufSplit, MissingPartIsAnErrorNamingIt) {
  const std::string dir = copy_parts({1, 0, 3});
  expect_error_naming(dest(dir, 1), dest(dir, 2), "part 2 of 3");
}

TEST(GgufSplit, PartOfAnotherSplitIsAnErrorNamingIt) {
  const std::string dir = copy_parts({1, 3, 3});  // part 3 renamed as part 2: its split.no is 2
  expect_error_naming(dest(dir, 1), dest(dir, 2), "split.no 2");
}

TEST(GgufSplit, TensorCountMismatchIsAnErrorNamingTheFirstPart) {
  const std::string dir = copy_parts({1, 2, 3});
  std::string bytes = test::read_file(part(1));
  const std::string key = "split.tensors.count";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  const int32_t wrong = 13;  // value follows the key and its u32 type id (INT32)
  std::memcpy(bytes.data() + at + key.size() + 4, &wrong, 4);
  std::ofstream(dest(dir, 1), std::ios::binary | std::ios::trunc) << bytes;
  expect_error_naming(dest(dir, 1), dest(dir, 1), "split.tensors.count is 13 but the 3 parts hold 5 + 5 + 2 = 12");
}

TEST(GgufSplit, ALaterPartAsksForTheFirst) {
  expect_error_naming(part(2), "Q8_0-00001-of-00003.gguf", "pass the first part");
}

}  // namespace
}  // namespace cai
