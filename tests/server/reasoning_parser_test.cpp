// ReasoningParser: <think> splitting whole, char by char, with tags split across pieces, template-opened, unclosed.
#include <gtest/gtest.h>

#include "tokenizer/reasoning_parser.h"

namespace cai {
namespace {

struct Split {
  std::string reasoning, content;
};

Split run(const std::vector<std::string>& pieces, bool opened = false) {
  ReasoningParser p(opened);
  Split out;
  for (const std::string& piece : pieces) {
    ReasoningDelta d = p.push(piece);
    out.reasoning += d.reasoning;
    out.content += d.content;
  }
  ReasoningDelta d = p.finish();
  out.reasoning += d.reasoning;
  out.content += d.content;
  return out;
}

std::vector<std::string> chars(const std::string& s) {
  std::vector<std::string> v;
  for (char c : s) v.emplace_back(1, c);
  return v;
}

TEST(ReasoningParser, PlainTextIsContentUnchanged) {
  Split s = run({" Once upon", " a time <b>"});
  EXPECT_EQ(s.reasoning, "");
  EXPECT_EQ(s.content, " Once upon a time <b>");
}

TEST(ReasoningParser, ThinkBlockThenAnswer) {
  const std::string text = "<think>\nLet me add 2 and 2.\n</think>\n\nThe answer is 4.";
  Split whole = run({text});
  EXPECT_EQ(whole.reasoning, "Let me add 2 and 2.\n");
  EXPECT_EQ(whole.content, "The answer is 4.");
  Split by_char = run(chars(text));
  EXPECT_EQ(by_char.reasoning, whole.reasoning);
  EXPECT_EQ(by_char.content, whole.content);
}

TEST(ReasoningParser, TagsSplitAcrossPieces) {
  Split s = run({"<thi", "nk>plan ", "A</th", "ink", ">do A"});
  EXPECT_EQ(s.reasoning, "plan A");
  EXPECT_EQ(s.content, "do A");
}

TEST(ReasoningParser, NothingHeldBackBeyondAPossibleTag) {
  ReasoningParser p(/*prompt_opened_think=*/true);
  ReasoningDelta d = p.push("step one </");
  EXPECT_EQ(d.reasoning, "step one ");  // "</" may start </think>
  d = p.push("b> two");
  EXPECT_EQ(d.reasoning, "</b> two");
  EXPECT_EQ(d.content, "");
}

TEST(ReasoningParser, TemplateOpenedThink) {
  Split s = run({"\nI should greet.", "</think>", "\n\nHello!"}, /*opened=*/true);
  EXPECT_EQ(s.reasoning, "I should greet.");
  EXPECT_EQ(s.content, "Hello!");
}

TEST(ReasoningParser, UnclosedThinkIsAllReasoning) {
  Split s = run({"<think>", "still thinking </thi"});
  EXPECT_EQ(s.reasoning, "still thinking </thi");
  EXPECT_EQ(s.content, "");
  Split opened = run({"never closed"}, /*opened=*/true);
  EXPECT_EQ(opened.reasoning, "never closed");
  EXPECT_EQ(opened.content, "");
}

TEST(ReasoningParser, LeadingWhitespaceBeforeThinkAndLaterThinkIsText) {
  Split s = run({"\n ", "<think>a</think>b <think>c"});
  EXPECT_EQ(s.reasoning, "a");
  EXPECT_EQ(s.content, "b <think>c");
  Split partial = run({"<thin"});  // output ended inside what looked like a tag
  EXPECT_EQ(partial.content, "<thin");
  Split late = run({"Hi <think>x</think>"});
  EXPECT_EQ(late.content, "Hi <think>x</think>");
}

TEST(ReasoningParser, PromptOpensThink) {
  EXPECT_TRUE(prompt_opens_think("<｜User｜>hi<｜Assistant｜><think>\n"));
  EXPECT_FALSE(prompt_opens_think("<｜User｜>hi<｜Assistant｜>"));
  EXPECT_FALSE(prompt_opens_think("<think>old</think> answer<｜User｜>next"));
  EXPECT_TRUE(prompt_opens_think("<think>old</think>x<think>"));
}

}  // namespace
}  // namespace cai
