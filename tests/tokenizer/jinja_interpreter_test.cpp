// The Jinja interpreter behind ChatTemplate: whitespace control, statements, expressions, filters, errors, limits.
// Expected strings are what Python's jinja2 renders with trim_blocks/lstrip_blocks (worked out by hand).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

namespace cai::test {
namespace {

using nlohmann::ordered_json;

Result<std::string> try_render(const std::string& src, const ordered_json& ctx = ordered_json::object(),
                               const ChatRenderOptions& options = {}) {
  CAI_ASSIGN_OR_RETURN(ChatTemplate tpl, ChatTemplate::parse(src));
  return tpl.render_ordered(ctx, options);
}

std::string render(const std::string& src, const ordered_json& ctx = ordered_json::object()) {
  Result<std::string> out = try_render(src, ctx);
  EXPECT_TRUE(out.ok()) << src << " → " << out.status().to_string();
  return out.ok() ? *out : "<error>";
}

std::string error_of(const std::string& src, const ordered_json& ctx = ordered_json::object(),
                     const ChatRenderOptions& options = {}) {
  Result<std::string> out = try_render(src, ctx, options);
  EXPECT_FALSE(out.ok()) << src << " rendered " << (out.ok() ? *out : "");
  return out.ok() ? "" : out.status().message();
}

TEST(JinjaWhitespace, TrimAndLstripBlocks) {
  EXPECT_EQ(render("  {% if true %}\n  x\n  {% endif %}\ny"), "  x\ny");
  EXPECT_EQ(render("{% for x in xs %}\n  {{ x }}\n{% endfor %}\n", {{"xs", {1, 2}}}), "  1\n  2\n");
  EXPECT_EQ(render("a\n"), "a");  // one trailing newline is dropped
  EXPECT_EQ(render("a\r\nb"), "a\nb");
}

TEST(JinjaWhitespace, MinusAndPlusMarkers) {
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif %}\n c\n"), "ab c");
  EXPECT_EQ(render("x \n {{- 1 -}} \n y"), "x1y");
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("  {#- comment -#}  x  {# c2 #}\n  y"), "x    y");
  EXPECT_EQ(render("{% raw %}\n{{ q }}{% endraw %}\n"), "\n{{ q }}");  // trim_blocks spares the raw opener
}

TEST(JinjaStatements, LoopVariablesElseAndFilter) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|"
                   "{% endfor %}",
                   {{"xs", {"a", "b", "c"}}}),
            "10TrueFalse3|21FalseFalse3|32FalseTrue3|");
  EXPECT_EQ(render("{% for x in [3, 1, 2] if x > 1 %}{{ loop.index }}/{{ loop.length }}:{{ x }} {% endfor %}"),
            "1/2:3 2/2:2 ");
  EXPECT_EQ(render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}{{ d.get('z', 0) }}",
                   {{"d", {{"x", 1}, {"y", 2}}}}),
            "x=1;y=2;0");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x is even %}{% continue %}{% endif %}{% if x > 6 %}{% break %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "135");
}

TEST(JinjaStatements, ScopesNamespacesMacrosAndBlocks) {
  // A set inside a loop stays inside it; namespace attributes carry out.
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% set local = i %}"
                   "{% endfor %}{{ ns.n }}{{ local }}"),
            "6");
  EXPECT_EQ(render("{% if true %}{% set y = 1 %}{% endif %}{{ y }}"), "1");
  EXPECT_EQ(render("{% if a %}A{% elif b %}B{% else %}C{% endif %}", {{"b", 1}}), "B");
  EXPECT_EQ(render("{% macro tag(name, body='') %}<{{ name }}>{{ body }}</{{ name }}>{% endmacro %}"
                   "{{ tag('b', 'x') }}{{ tag(name='i') }}"),
            "<b>x</b><i></i>");
  EXPECT_EQ(render("{% set x %}in {{ 1 }}{% endset %}[{{ x }}]{% filter upper %}ab{% endfilter %}"), "[in 1]AB");
  EXPECT_EQ(render("{{ '{{' }}{% raw %}{% not parsed %}{% endraw %}"), "{{{% not parsed %}");
  EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
}

TEST(JinjaExpressions, ArithmeticAndPythonPrinting) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 8 }} {{ 'ab' ~ 1 ~ none }} "
                   "{{ 0.1 + 0.2 }} {{ 1e-5 }} {{ 1e16 }} {{ 2.0 }}"),
            "3 -4 1 2 3.5 256 ab1None 0.30000000000000004 1e-05 1e+16 2.0");
  EXPECT_EQ(
      render("{{ 'x' if n > 1 else 'y' }}{{ 'q' if false }}|{{ none }}|{{ true }}|{{ [1, 'a'] }}|{{ {'k': none} }}"
             "|{{ (1, 2) }}",
             {{"n", 2}}),
      "x|None|True|[1, 'a']|{'k': None}|(1, 2)");
  EXPECT_EQ(render("{{ 1 < 2 < 3 }}{{ 'a' in 'cat' }}{{ 3 not in [1] }}{{ not 1 }}{{ 1 == 1.0 }}{{ 'k' in {'k': 1} }}"),
            "TrueTrueTrueFalseTrueTrue");
}

TEST(JinjaExpressions, StringsSlicesAndMethods) {
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ 'héllo'[::-1] }} {{ [1, 2, 3][1:] }} {{ '  pad '.rstrip() }}|"),
            "['a', 'b', '', 'c'] olléh [2, 3]   pad|");
  EXPECT_EQ(render("{{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'xxabxx'.strip('x') }}"
                   "{{ 'a-b-c'.replace('-', '+', 1) }}{{ 'a\\tb' | length }}{{ 'héllo' | length }}{{ 'ab'[-1] }}"),
            "TrueTrueaba+b-c35b");
  EXPECT_EQ(
      render("{{ m.content.split('</think>')[-1].lstrip('\\n') }}", {{"m", {{"content", "<think>r</think>\n\nA"}}}}),
      "A");
}

TEST(JinjaExpressions, UndefinedLikeJinja2) {
  EXPECT_EQ(
      render("{{ x }}|{{ x is defined }}|{{ x | default('d') }}|{% for i in x %}never{% endfor %}|{{ x | length }}"),
      "|False|d||0");
  EXPECT_EQ(render("{{ msg.missing }}|{{ msg.missing is defined }}|{{ msg.a }}", {{"msg", {{"a", 1}}}}), "|False|1");
  EXPECT_NE(error_of("{{ undefined_var.attr }}").find("'undefined_var' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{{ msg.missing.deeper }}", {{"msg", {{"a", 1}}}}).find("has no attribute 'missing'"),
            std::string::npos);
  EXPECT_FALSE(try_render("{{ 'a' + x }}").ok());
}

TEST(JinjaFilters, CommonFilters) {
  EXPECT_EQ(
      render("{{ '  x  ' | trim }}{{ 'Ab' | upper }}{{ 'Ab' | lower }}{{ [1, 2, 3] | first }}{{ [1, 2, 3] | last }}"
             "{{ [1, 2, 3] | join('-') }}{{ 3 | string }}{{ 'ab' | list }}{{ 'a-b' | replace('-', '') }}"
             "{{ [3, 1, 2] | sort }}{{ [1, 1, 2] | unique | list }}{{ ['x'] | safe }}"),
      "xABab131-2-33['a', 'b']ab[1, 2, 3][1, 2]['x']");
  EXPECT_EQ(render("{{ xs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(', ') }}",
                   {{"xs", ordered_json::parse(R"([{"role": "user", "content": "a"}, {"role": "system", "content": "b"},
                                                   {"role": "user", "content": "c"}])")}}),
            "a, c");
  EXPECT_EQ(render("{{ 'a\\nb' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}"), "a\n  b|  a\n  b");
  EXPECT_EQ(render("{{ 2.675 | round(2) }} {{ 2.5 | round }} {{ 7 | round }} {{ ' a b '.split(none, 1) }}"),
            "2.67 2.0 7 ['a', 'b ']");
}

TEST(JinjaFilters, TojsonKeepsNonAsciiAndOrder) {
  EXPECT_EQ(render("{{ {'é': 'ü', 'k': [1, 2.5, none, true]} | tojson }}"),
            "{\"é\": \"ü\", \"k\": [1, 2.5, null, true]}");
  EXPECT_EQ(render("{{ t | tojson(indent=2) }}", {{"t", ordered_json::parse(R"({"b": [1, {}], "a": "x\n"})")}}),
            "{\n  \"b\": [\n    1,\n    {}\n  ],\n  \"a\": \"x\\n\"\n}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}{{ '<&>' | tojson }}"),
            "{\"a\": 2, \"b\": 1}\"<&>\"");
}

TEST(JinjaGlobals, StrftimeNowIsInjectable) {
  ChatRenderOptions options;
  std::tm day{};
  day.tm_year = 2024 - 1900;
  day.tm_mon = 6;
  day.tm_mday = 26;
  options.now = day;
  Result<std::string> out = try_render("{{ strftime_now('%d %b %Y') }}", ordered_json::object(), options);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "26 Jul 2024");
}

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  EXPECT_NE(error_of("ok\n{% if true %}x").find("expected '{% endif %}'"), std::string::npos);
  EXPECT_NE(error_of("{{ x").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("a\nb {{ x | nosuchfilter }}").find("line 2 col"), std::string::npos);
  EXPECT_NE(error_of("{{ x | nosuchfilter }}").find("no filter named 'nosuchfilter'"), std::string::npos);
  EXPECT_NE(error_of("{{ x is nosuchtest }}").find("no test named"), std::string::npos);
  EXPECT_NE(error_of("{% endfor %}").find("unknown tag 'endfor'"), std::string::npos);
  EXPECT_NE(error_of("{% break %}").find("outside of a loop"), std::string::npos);
  EXPECT_NE(error_of("{{ 'open }}").find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of("{# no end").find("comment"), std::string::npos);
  EXPECT_NE(error_of("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}").find("nesting deeper"),
            std::string::npos);
  EXPECT_EQ(render("{{ " + std::string(50, '(') + "1" + std::string(50, ')') + " }}"), "1");
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_NE(error_of(chain + " }}").find("nested deeper"), std::string::npos);
}

TEST(JinjaErrors, RaiseExceptionIsARenderError) {
  Result<std::string> out = try_render("line1\n{{ raise_exception('bad role') }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "chat template error at line 2: bad role");
}

TEST(JinjaLimits, RunawayLoopsAndOutputAreBounded) {
  ChatRenderOptions options;
  options.max_steps = 100000;
  EXPECT_NE(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                     ordered_json::object(), options)
                .find("evaluation steps"),
            std::string::npos);
  options = {};
  options.max_output_bytes = 1000;
  EXPECT_NE(error_of("{% for i in range(1000) %}xx{% endfor %}", ordered_json::object(), options).find("exceeds 1000"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                     ordered_json::object(), options)
                .find("exceeds"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000 }}", ordered_json::object(), options).find("exceeds"), std::string::npos);
  EXPECT_NE(error_of("{{ range(1000000) | length }}").find("range too big"), std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("nested deeper"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(v=1) %}{% for i in range(500) %}{% set ns.v = [ns.v] %}{% endfor %}")
                .find("nested deeper"),
            std::string::npos);
}

}  // namespace
}  // namespace cai::test
