// ReasoningBudget: counts tokens inside <think> (opened by the prompt or by the model), forces the close sequence once
// the budget is spent, and stays out of the way of outputs that never think or close </think> themselves.
#include "runtime/reasoning_budget.h"

#include <gtest/gtest.h>

#include "model/loaders/gguf.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace cai {
namespace {

const std::vector<int32_t> kClose = {901, 902, 903};

// Feeds `pieces` as one token each; returns how many were fed before the first forced token (-1: never forced).
int tokens_before_forcing(ReasoningBudget& b, const std::vector<std::string>& pieces) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (b.forced()) return static_cast<int>(i);
    b.observe(pieces[i]);
  }
  return b.forced() ? static_cast<int>(pieces.size()) : -1;
}

TEST(ReasoningBudget, PromptOpenedThinkIsClosedAfterTheBudget) {
  ReasoningBudget b(3, /*prompt_opened_think=*/true, kClose);
  EXPECT_EQ(tokens_before_forcing(b, {"a", "b", "c", "d"}), 3);
  for (int32_t want : kClose) {
    ASSERT_EQ(b.forced(), want);
    b.observe("x");
  }
  EXPECT_FALSE(b.forced());  // the answer is sampled again
  b.observe("answer");
  EXPECT_FALSE(b.forced());
  ReasoningBudget zero(0, true, kClose);
  EXPECT_EQ(zero.forced(), kClose[0]);
}

TEST(ReasoningBudget, ModelOpenedThinkCountsFromTheOpeningToken) {
  ReasoningBudget b(3, false, kClose);
  EXPECT_EQ(tokens_before_forcing(b, {" ", "<th", "ink>", "a", "b", "c"}), 5);  // "ink>" opens it and counts
  EXPECT_EQ(b.n_reasoning_tokens(), 3);
}

TEST(ReasoningBudget, NoThinkOrAClosedThinkIsNeverForced) {
  ReasoningBudget plain(2, false, kClose);
  EXPECT_EQ(tokens_before_forcing(plain, {"Hello", "a", "b", "c", "d"}), -1);
  ReasoningBudget closed(3, true, kClose);
  EXPECT_EQ(tokens_before_forcing(closed, {"a", "</th", "ink>", "b", "c", "d"}), -1);
  ReasoningBudget unwritable(1, true, {});  // the vocabulary cannot write </think>
  EXPECT_EQ(tokens_before_forcing(unwritable, {"a", "b"}), -1);
}

TEST(ReasoningBudget, CloseTokensContinueTheText) {
  // stories260K (SentencePiece with byte fallback) can write the close; TinyStories-656K cannot ('/' is <unk>).
  for (const char* rel : {"models/stories260K.gguf", "models/TinyStories-656K-Q8_0.gguf"}) {
    auto gguf = GgufFile::open(test::data_path(rel));
    ASSERT_TRUE(gguf.ok());
    auto tok = Tokenizer::from_gguf_metadata(gguf.value()->metadata());
    ASSERT_TRUE(tok.ok());
    const std::vector<int32_t> ids = reasoning_close_tokens(**tok);
    if (std::string(rel).find("260K") == std::string::npos) {
      EXPECT_TRUE(ids.empty());
      continue;
    }
    Tokenizer::StreamingDecoder d(**tok, /*skip_special=*/true, /*continues_text=*/true);
    std::string text;
    for (int32_t id : ids) text += d.push(id);
    EXPECT_EQ(text + d.flush(), kReasoningClose);
  }
}

}  // namespace
}  // namespace cai
