// RequestState: stop strings are found across token boundaries, the text that could start one is held back from the
// stream until it is told apart, and nothing after a stop string is released.
#include "runtime/request_state.h"

#include <gtest/gtest.h>

#include "test_paths.h"
#include "tiny_tokenizer.h"

namespace cai {
namespace {

using test::tiny_tokenizer;

TEST(RequestState, StopStringSpanningTokensIsHeldBackAndCut) {
  const auto tok = tiny_tokenizer();
  const std::vector<int32_t> ids = tok->encode("Once upon a time, there was a little girl", false);
  std::vector<std::string> pieces;
  Tokenizer::StreamingDecoder d(*tok, true, true);
  for (int32_t id : ids) pieces.push_back(d.push(id));
  ASSERT_GE(pieces.size(), 4u);
  // The last two bytes of piece 1 and the first two of piece 2 (" upon" + " a" → "on a").
  const std::string stop = pieces[1].substr(pieces[1].size() - 2) + pieces[2].substr(0, 2);
  const size_t start = pieces[0].size() + pieces[1].size() - 2;
  std::string full;
  for (const std::string& p : pieces) full += p;
  ASSERT_EQ(full.find(stop), start) << stop;

  GenerationRequest r;
  r.stop = {"girl", stop};  // the earliest match wins, whichever string it is
  RequestState rs(
      r, [](const StreamEvent&) {}, tok.get());
  std::string released;
  bool stop_hit = false;
  for (size_t i = 0; i < ids.size() && !stop_hit; ++i) {
    released += rs.push_token(ids[i], stop_hit);
    EXPECT_LE(released.size(), start) << "text of the stop string was released after token " << i;
    EXPECT_EQ(stop_hit, i == 2) << "token " << i;
  }
  EXPECT_EQ(released, full.substr(0, start));
  EXPECT_TRUE(rs.stopped());
  EXPECT_EQ(rs.stop_string(), stop);  // the one that matched, not the first listed
  EXPECT_EQ(rs.finish_text(), "");    // nothing after a stop string

  GenerationRequest none;
  none.stop = {"zebra"};
  RequestState plain(
      none, [](const StreamEvent&) {}, tok.get());
  released.clear();
  for (int32_t id : ids) released += plain.push_token(id, stop_hit);
  EXPECT_LT(released.size(), full.size());  // the last 4 bytes could still begin "zebra"
  EXPECT_EQ(released + plain.finish_text(), full);
  EXPECT_EQ(plain.stop_string(), "");
}

}  // namespace
}  // namespace cai
