// Helpers shared by the grammar and JSON-Schema tests (header-only: the test glob builds only *_test.cpp files): a
// schema's grammar, the strings it must accept or refuse, and a refusal that names its keyword.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/grammar/grammar.h"

namespace cai::test {

// zod 4's patterns for .email(), .uuid() and .datetime() as z.toJSONSchema writes them: JSON strings, to splice into
// a schema's text.
inline constexpr const char* kZodEmailPattern =
    R"x("^(?!\\.)(?!.*\\.\\.)([A-Za-z0-9_'+\\-\\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\\-]*\\.)+)x"
    R"x([A-Za-z]{2,}$")x";
inline constexpr const char* kZodUuidPattern =
    R"x("^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12})x"
    R"x(|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$")x";
inline constexpr const char* kZodDatetimePattern =
    R"x("^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29)x"
    R"x(|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30))x"
    R"x(|(?:02)-(?:0[1-9]|1\\d|2[0-8])))T(?:(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?(?:Z))$")x";

// The grammar of schema `text` (a failed expectation, and the empty language, when it is refused).
inline grammar::Grammar schema(const std::string& text) {
  Result<grammar::Grammar> g = grammar::Grammar::json_schema(nlohmann::ordered_json::parse(text));
  EXPECT_TRUE(g.ok()) << text << ": " << g.status().to_string();
  return g.ok() ? g.value() : grammar::Grammar::literal("");
}

inline void expect_language(const grammar::Grammar& g, const std::vector<std::string>& accept,
                            const std::vector<std::string>& reject) {
  for (const std::string& s : accept) EXPECT_TRUE(g.matches(s)) << "should accept: " << s;
  for (const std::string& s : reject) EXPECT_FALSE(g.matches(s)) << "should refuse: " << s;
}

// Schema `text` is refused with kInvalidArgument, the message starting with "keyword:" and containing `detail`.
inline void expect_refused(const std::string& text, const std::string& keyword, const std::string& detail = "") {
  Result<grammar::Grammar> g = grammar::Grammar::json_schema(nlohmann::ordered_json::parse(text));
  ASSERT_FALSE(g.ok()) << text;
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.status().message().rfind(keyword + ":", 0), 0u) << text << " → " << g.status().message();
  EXPECT_NE(g.status().message().find(detail), std::string::npos) << text << " → " << g.status().message();
}

}  // namespace cai::test
