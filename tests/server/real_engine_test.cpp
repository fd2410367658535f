// HttpServer over a real Engine and model (stories260K, whose byte-fallback vocabulary can write "</think>") with a
// chat template that opens <think>: the reasoning budget cuts the reasoning after exactly its tokens and the answer
// follows; n = 3 sampled choices differ; a request's speculative decoding keeps its text and reports its drafts.
#include <gtest/gtest.h>

#include <set>

#include "hal/hal.h"
#include "server_fixture.h"

namespace cai::server {
namespace {

using namespace test_support;

class RealEngineTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}<think>\n";
    start(o, /*attach=*/false);
    Result<hal::Device*> cpu = hal::Registry::global().find_device("cpu");
    ASSERT_TRUE(cpu.ok());
    Result<LoadedModel> model = load_model(test::data_path("models/stories260K.gguf"), **cpu);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    auto engine = Engine::create(std::move(model).value(), EngineOptions{});
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    ASSERT_TRUE(server_->attach(std::move(engine).value()).ok());
  }
  json chat(const std::string& extra) {
    auto r = post("/v1/chat/completions",
                  R"({"messages": [{"role": "user", "content": "Once upon a time"}], )" + extra + "}");
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }
};

TEST_F(RealEngineTest, ReasoningBudgetKeepsItsFirstTokensThenTheAnswerFollows) {
  const json free = chat(R"("max_tokens": 24, "temperature": 0, "ignore_eos": true, "logprobs": true)");
  EXPECT_EQ(free["choices"][0]["message"]["content"], "");  // this model never closes </think> itself
  const json& tokens = free["choices"][0]["logprobs"]["content"];
  for (int budget : {4, 9}) {
    std::string first;
    for (int i = 0; i < budget; ++i) first += tokens[i]["token"].get<std::string>();
    first.erase(0, first.find_first_not_of(" \n"));  // white space after <think> is dropped
    const json cut = chat(R"("max_tokens": 24, "temperature": 0, "ignore_eos": true, "max_reasoning_tokens": )" +
                          std::to_string(budget));
    const json& msg = cut["choices"][0]["message"];
    EXPECT_EQ(msg["reasoning_content"], first + "\n") << "budget " << budget;
    EXPECT_FALSE(msg["content"].get<std::string>().empty()) << cut.dump();
    EXPECT_EQ(cut["usage"]["completion_tokens"], 24);
  }
}

// /v1/status after requests: the engine's counters, the latency percentiles of the last minutes, the CPU with its
// memory and its share of the weights, and at least the current sample in the history; /dashboard is the page that
// reads it, with nothing from outside the server.
TEST_F(RealEngineTest, StatusReportsTheEngineTheLatenciesAndTheDevice) {
  for (int i = 0; i < 3; ++i) chat(R"("max_tokens": 8, "temperature": 0, "ignore_eos": true)");
  auto r = client_->Get("/v1/status");
  ASSERT_EQ(r->status, 200) << r->body;
  const json s = json::parse(r->body);
  EXPECT_EQ(s["object"], "status");
  EXPECT_EQ(s["model"], "tiny");
  EXPECT_EQ(s["engine"]["generated_tokens_total"], 24);
  EXPECT_EQ(s["engine"]["running"], 0);
  EXPECT_GT(s["engine"]["kv_blocks_total"].get<int>(), 0);
  EXPECT_EQ(s["engine"]["throttled"], false);
  EXPECT_EQ(s["latency"]["ttft_seconds"]["count"], 3);
  EXPECT_EQ(s["latency"]["tpot_seconds"]["count"], 21);  // 7 gaps after each first token
  const json& ttft = s["latency"]["ttft_seconds"];
  EXPECT_GT(ttft["p50"].get<double>(), 0);
  EXPECT_LE(ttft["p50"].get<double>(), ttft["p99"].get<double>());
  EXPECT_LE(ttft["p99"].get<double>(), ttft["max"].get<double>());
  ASSERT_EQ(s["devices"].size(), 1u);
  const json& cpu = s["devices"][0];
  EXPECT_EQ(cpu["name"], "cpu:0");
  EXPECT_GT(cpu["memory_total_bytes"].get<uint64_t>(), cpu["memory_used_bytes"].get<uint64_t>());
  EXPECT_GT(cpu["weight_bytes"].get<uint64_t>(), 0u);
  const json& h = s["history"];
  ASSERT_GE(h["t"].size(), 1u);
  EXPECT_EQ(h["running"].size(), h["t"].size());
  EXPECT_EQ(h["devices"]["cpu:0"]["memory_used_bytes"].size(), h["t"].size());
  EXPECT_GE(s["throughput"]["generated_tokens_per_second"].get<double>(), 0);

  auto page = client_->Get("/dashboard");
  ASSERT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("fetch(\"/v1/status\""), std::string::npos);
  for (const char* outside : {"http://", "https://", "//cdn"}) EXPECT_EQ(page->body.find(outside), std::string::npos);
  EXPECT_NE(client_->Get("/")->body.find("href=\"/dashboard\""), std::string::npos);  // linked from the chat page
}

TEST_F(RealEngineTest, SampledChoicesDiffer) {
  const json r = chat(R"("max_tokens": 12, "temperature": 1, "seed": 3, "n": 3, "ignore_eos": true)");
  ASSERT_EQ(r["choices"].size(), 3u);
  std::set<std::string> texts;
  for (const json& c : r["choices"]) texts.insert(c["message"]["reasoning_content"].get<std::string>());
  EXPECT_EQ(texts.size(), 3u);
  EXPECT_EQ(r["usage"]["completion_tokens"], 36);
  EXPECT_EQ(chat(R"("max_tokens": 12, "temperature": 1, "seed": 3, "n": 3, "ignore_eos": true)")["choices"],
            r["choices"]);  // reproducible with the seed
}

// Prompt lookup asked for per request: the same greedy text, the drafts in OpenAI's predicted-output usage fields and
// in /metrics; methods the server has not loaded and bad values are 400s.
TEST_F(RealEngineTest, SpeculativeRequestKeepsItsTextAndReportsDrafts) {
  const std::string plain = R"("max_tokens": 48, "temperature": 0, "ignore_eos": true)";
  const json base = chat(plain);
  const json spec = chat(plain + R"(, "speculative_method": "ngram", "num_speculative_tokens": 4)");
  EXPECT_EQ(spec["choices"][0]["message"], base["choices"][0]["message"]);
  EXPECT_FALSE(base["usage"].contains("completion_tokens_details"));
  const json& details = spec["usage"]["completion_tokens_details"];
  const int accepted = details["accepted_prediction_tokens"], rejected = details["rejected_prediction_tokens"];
  EXPECT_GT(accepted, 0) << spec["usage"].dump();
  EXPECT_GE(rejected, 0);
  auto metrics = client_->Get("/metrics");
  ASSERT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("cai_spec_info{method=\"off\"} 0"), std::string::npos) << metrics->body;
  EXPECT_NE(metrics->body.find("cai_spec_accepted_tokens_total " + std::to_string(accepted)), std::string::npos);
  EXPECT_NE(metrics->body.find("cai_spec_draft_tokens_total " + std::to_string(accepted + rejected)),
            std::string::npos);
  const std::string prompt = R"({"messages": [{"role": "user", "content": "Hi"}], )";
  for (const char* bad : {R"("speculative_method": "mtp")", R"("speculative_method": "fast")",
                          R"("num_speculative_tokens": 99)", R"("num_speculative_tokens": -1)"}) {
    auto r = post("/v1/chat/completions", prompt + bad + "}");
    EXPECT_EQ(r->status, 400) << bad << " " << r->body;
  }
}

}  // namespace
}  // namespace cai::server
