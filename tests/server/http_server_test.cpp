// HttpServer over a FakeEngine: routes, SSE framing, reasoning split, every error status, auth, disconnect → cancel.
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace cai::server {
namespace {

using namespace test_support;

TEST_F(ServerTest, HealthIs503WhileLoadingThen200) {
  start({}, /*attach=*/false);
  auto r = client_->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  auto chat = post("/v1/chat/completions", kChat);
  EXPECT_EQ(chat->status, 503);
  EXPECT_EQ(error_of(chat)["code"], "model_loading");
  EXPECT_EQ(client_->Get("/v1/models")->status, 503);
  EXPECT_EQ(client_->Get("/v1/status")->status, 503);
  EXPECT_EQ(client_->Get("/dashboard")->status, 200);  // the page says the server is loading
  attach_engine();
  EXPECT_EQ(client_->Get("/health")->status, 200);
  EXPECT_EQ(client_->Get("/v1/status")->status, 200);
}

TEST_F(ServerTest, ModelsAndPage) {
  start();
  auto r = client_->Get("/v1/models");
  ASSERT_EQ(r->status, 200);
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "tiny");
  EXPECT_EQ(j["data"][0]["max_model_len"], 64);
  EXPECT_EQ(client_->Get("/v1/models/tiny")->status, 200);
  EXPECT_EQ(client_->Get("/v1/models/other")->status, 404);
  auto page = client_->Get("/");
  ASSERT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
  EXPECT_EQ(page->body.find("http://"), std::string::npos);  // no external resources
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
}

TEST_F(ServerTest, ChatNonStreaming) {
  start();
  engine_->script.n_cached = 1;
  auto r = post("/v1/chat/completions",
                R"({"messages": [{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Hello"}],
                    "temperature": 0, "top_k": 5, "seed": 7, "stop": ["END"], "max_tokens": 20})");
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_TRUE(j["id"].get<std::string>().starts_with("chatcmpl-"));
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Once upon a time");
  EXPECT_FALSE(j["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  ASSERT_EQ(engine_->requests().size(), 1u);
  const GenerationRequest g = engine_->requests()[0];
  const int n_prompt = static_cast<int>(g.prompt.size());
  EXPECT_EQ(j["usage"], json({{"prompt_tokens", n_prompt},
                              {"completion_tokens", 4},
                              {"total_tokens", n_prompt + 4},
                              {"prompt_tokens_details", {{"cached_tokens", 1}}}}));
  // TinyStories has no chat template: the fallback joins the contents with a blank line, after BOS.
  const Tokenizer& tok = *engine_->model().tokenizer;
  EXPECT_EQ(g.prompt, tok.encode("Be nice.\n\nHello", tok.add_bos_default()));
  EXPECT_EQ(g.max_tokens, 20);
  EXPECT_FLOAT_EQ(g.sampling.temperature, 0.0f);
  EXPECT_EQ(g.sampling.top_k, 5);
  EXPECT_EQ(g.sampling.seed, 7u);
  EXPECT_EQ(g.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(g.top_logprobs, -1);
}

TEST_F(ServerTest, ChatStreamingFramingAndUsage) {
  start();
  auto r = post("/v1/chat/completions",
                R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true,
                    "stream_options": {"include_usage": true}})");
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  std::vector<std::string> data = sse_payloads(r->body);
  ASSERT_GE(data.size(), 4u);
  EXPECT_EQ(data.back(), "[DONE]");
  json first = json::parse(data[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string content;
  std::string finish;
  json usage;
  for (size_t i = 0; i + 1 < data.size(); ++i) {
    json c = json::parse(data[i]);
    EXPECT_EQ(c["id"], first["id"]);
    if (c.contains("usage")) {
      EXPECT_TRUE(c["choices"].empty());
      usage = c["usage"];
      continue;
    }
    if (c["choices"][0]["delta"].contains("content")) content += c["choices"][0]["delta"]["content"];
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(content, "Once upon a time");
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(usage["completion_tokens"], 4);
  EXPECT_EQ(usage["total_tokens"], usage["prompt_tokens"].get<int>() + 4);
}

TEST_F(ServerTest, ReasoningContentSplit) {
  start();
  engine_->script.pieces = {"<th", "ink>\nThe user", " greets.</thi", "nk>\n\nHel", "lo!"};
  auto r = post("/v1/chat/completions", kChat);
  ASSERT_EQ(r->status, 200);
  json msg = json::parse(r->body)["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "The user greets.");
  EXPECT_EQ(msg["content"], "Hello!");

  auto s = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true})");
  std::string reasoning, content;
  for (const std::string& d : sse_payloads(s->body)) {
    if (d == "[DONE]") break;
    json delta = json::parse(d)["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"];
    if (delta.contains("content")) content += delta["content"];
  }
  EXPECT_EQ(reasoning, "The user greets.");
  EXPECT_EQ(content, "Hello!");
}

TEST_F(ServerTest, TemplateOpenedThinkAndUnclosedReasoning) {
  ServerOptions o;
  o.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}{{ '<think>\\n' }}";  // as R1 distills
  start(o);
  engine_->script.pieces = {"Hmm, a greeting.", "</think>", "Hi there"};
  json msg = json::parse(post("/v1/chat/completions", kChat)->body)["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "Hmm, a greeting.");
  EXPECT_EQ(msg["content"], "Hi there");
  engine_->script.pieces = {"thinking", " forever"};
  engine_->script.finish = FinishReason::kLength;
  json full = json::parse(post("/v1/chat/completions", kChat)->body);
  EXPECT_EQ(full["choices"][0]["message"]["reasoning_content"], "thinking forever");
  EXPECT_EQ(full["choices"][0]["message"]["content"], "");
  EXPECT_EQ(full["choices"][0]["finish_reason"], "length");
  const Tokenizer& tok = *engine_->model().tokenizer;
  EXPECT_EQ(engine_->requests()[0].prompt, tok.encode("Hello<think>\n", tok.add_bos_default()));
}

TEST_F(ServerTest, Completions) {
  start();
  auto r = post("/v1/completions", R"({"prompt": "Once", "max_tokens": 4, "logprobs": 1})");
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "Once upon a time");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], json({"Once", " upon", " a", " time"}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], json({0, 4, 9, 11}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["top_logprobs"][1], json({{" upon", -0.5}}));
  auto ids = post("/v1/completions", R"({"prompt": [1, 2, 3], "stream": true})");
  ASSERT_EQ(ids->status, 200);
  EXPECT_EQ(engine_->requests()[1].prompt, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(engine_->requests()[1].max_tokens, 16);  // OpenAI's completions default
  std::string text;
  for (const std::string& d : sse_payloads(ids->body))
    if (d != "[DONE]") text += json::parse(d)["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, "Once upon a time");
  EXPECT_EQ(post("/v1/completions", R"({"prompt": [999999]})")->status, 400);  // outside the vocabulary
}

TEST_F(ServerTest, ChatLogprobs) {
  start();
  auto r = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true,
                                            "top_logprobs": 2})");
  json lp = json::parse(r->body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 4u);
  EXPECT_EQ(lp[0]["token"], "Once");
  EXPECT_EQ(lp[0]["bytes"], json({79, 110, 99, 101}));
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(engine_->requests()[0].top_logprobs, 2);
}

TEST_F(ServerTest, BadRequests) {
  start();
  auto bad_json = post("/v1/chat/completions", "{not json");
  EXPECT_EQ(bad_json->status, 400);
  EXPECT_EQ(error_of(bad_json)["type"], "invalid_request_error");
  auto bad_type = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "top_p": "a"})");
  EXPECT_EQ(bad_type->status, 400);
  EXPECT_EQ(error_of(bad_type)["param"], "top_p");
  auto unknown = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "wat": 1})");
  EXPECT_EQ(unknown->status, 400);
  EXPECT_EQ(error_of(unknown)["param"], "wat");
  auto n17 = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "n": 17})");
  EXPECT_EQ(n17->status, 400);
  EXPECT_EQ(error_of(n17)["param"], "n");
  auto ignored = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "user": "me",
                                                  "metadata": {"a": "b"}, "parallel_tool_calls": true})");
  EXPECT_EQ(ignored->status, 200);
  auto model = post("/v1/chat/completions", R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(model->status, 404);
  EXPECT_EQ(error_of(model)["code"], "model_not_found");
  EXPECT_EQ(post("/v1/chat/completions", kChat + std::string("\0garbage", 8))->status, 400);
  auto route = client_->Get("/v1/nothing");
  EXPECT_EQ(route->status, 404);
  EXPECT_EQ(error_of(route)["code"], "not_found");
}

TEST_F(ServerTest, ContextLimits) {
  start({}, true, /*ctx_size=*/8);
  const std::string long_prompt = R"({"prompt": "Once upon a time there was a little girl named Lily who loved"})";
  auto r = post("/v1/completions", long_prompt);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(error_of(r)["code"], "context_length_exceeded");
  EXPECT_EQ(error_of(r)["param"], "prompt");
  auto too_many = post("/v1/completions", R"({"prompt": "Once", "max_tokens": 100})");
  EXPECT_EQ(too_many->status, 400);
  EXPECT_EQ(error_of(too_many)["code"], "context_length_exceeded");
  EXPECT_TRUE(engine_->requests().empty());
}

TEST_F(ServerTest, BodyTooLarge) {
  ServerOptions o;
  o.max_body_bytes = 1024;
  start(o);
  auto r = post("/v1/completions", R"({"prompt": ")" + std::string(4096, 'a') + "\"}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(error_of(r)["code"], "request_too_large");
}

TEST_F(ServerTest, ApiKey) {
  ServerOptions o;
  o.api_key = "sekret";
  start(o);
  auto missing = post("/v1/chat/completions", kChat);
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(error_of(missing)["code"], "invalid_api_key");
  httplib::Headers wrong = {{"Authorization", "Bearer sekret2"}};
  EXPECT_EQ(client_->Get("/v1/models", wrong)->status, 401);
  httplib::Headers right = {{"Authorization", "Bearer sekret"}};
  EXPECT_EQ(client_->Get("/v1/models", right)->status, 200);
  EXPECT_EQ(client_->Post("/v1/chat/completions", right, kChat, "application/json")->status, 200);
  EXPECT_EQ(client_->Get("/health")->status, 200);  // open without a key
  EXPECT_EQ(client_->Get("/")->status, 200);
}

TEST_F(ServerTest, EngineRefusalsMapToStatuses) {
  start();
  engine_->script.submit_status = resource_exhausted("waiting queue full (256)");
  auto busy = post("/v1/chat/completions", kChat);
  EXPECT_EQ(busy->status, 429);
  EXPECT_EQ(error_of(busy)["code"], "rate_limit_exceeded");
  EXPECT_EQ(busy->get_header_value("Retry-After"), "1");
  engine_->script.submit_status = unavailable("shutting down");
  EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 503);
  engine_->script.submit_status = invalid_argument("bad sampling");
  EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 400);
  engine_->script.submit_status = Status();
  engine_->script.finish = FinishReason::kError;
  engine_->script.error = "device lost";
  auto failed = post("/v1/chat/completions", kChat);
  EXPECT_EQ(failed->status, 500);
  EXPECT_NE(error_of(failed)["message"].get<std::string>().find("device lost"), std::string::npos);
  // The engine refusing what the request asks of this model (e.g. an output format its vocabulary cannot write) is the
  // client's error.
  engine_->script.error_code = StatusCode::kInvalidArgument;
  engine_->script.error = "the model's vocabulary cannot write the text the output format requires";
  auto refused = post("/v1/chat/completions", kChat);
  EXPECT_EQ(refused->status, 400);
  EXPECT_EQ(error_of(refused)["type"], "invalid_request_error");
  engine_->script.error_code = StatusCode::kInternal;
  engine_->script.error = "device lost";
  auto stream = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "stream": true})");
  std::vector<std::string> data = sse_payloads(stream->body);
  ASSERT_GE(data.size(), 2u);
  EXPECT_EQ(data.back(), "[DONE]");
  EXPECT_TRUE(json::parse(data[data.size() - 2]).contains("error"));
  // A device that ran out of memory mid-step: 503 (try again later), and the server goes on answering.
  engine_->script.error = "simt:0: cannot allocate 4096 bytes";
  engine_->script.error_code = StatusCode::kOutOfMemory;
  auto oom = post("/v1/chat/completions", kChat);
  EXPECT_EQ(oom->status, 503);
  EXPECT_EQ(error_of(oom)["code"], "device_out_of_memory");
  // A transfer between the model's devices that failed (a pipeline stage boundary): 503 as well, naming it.
  engine_->script.error = "moving 512 bytes from simt:0 to simt:1: copy_to_host: launch failure";
  engine_->script.error_code = StatusCode::kUnavailable;
  auto lost = post("/v1/chat/completions", kChat);
  EXPECT_EQ(lost->status, 503);
  EXPECT_EQ(error_of(lost)["code"], "device_transfer_failed");
  EXPECT_NE(error_of(lost)["message"].get<std::string>().find("simt:0 to simt:1"), std::string::npos);
  engine_->script.finish = FinishReason::kStop;
  EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 200);
}

TEST_F(ServerTest, ClientDisconnectCancelsTheRequest) {
  start();
  engine_->script.hold = true;  // the request produces nothing until cancelled
  stream_then_disconnect(server_->port());
  EXPECT_TRUE(engine_->wait_cancelled(std::chrono::seconds(5)));
  EXPECT_EQ(engine_->cancelled(), std::vector<uint64_t>{1});
  engine_->script.hold = false;
  EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 200);  // the server carries on
}

TEST_F(ServerTest, MetricsText) {
  start();
  ASSERT_EQ(post("/v1/chat/completions", kChat)->status, 200);
  ASSERT_EQ(post("/v1/chat/completions", "{")->status, 400);
  ASSERT_EQ(client_->Get("/nope")->status, 404);
  auto r = client_->Get("/metrics");
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  const std::string& m = r->body;
  for (const char* line :
       {"cai_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 1\n",
        "cai_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"400\"} 1\n",
        "cai_http_requests_total{endpoint=\"other\",status=\"404\"} 1\n",
        "# TYPE cai_time_to_first_token_seconds histogram\n", "cai_time_to_first_token_seconds_count 1\n",
        "cai_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n", "cai_time_per_output_token_seconds_count 3\n",
        "cai_e2e_request_latency_seconds_count 1\n", "cai_num_requests_running 2\n", "cai_num_requests_waiting 1\n",
        "cai_kv_blocks_used 10\n", "cai_kv_blocks_free 30\n", "cai_kv_cache_info{dtype=\"bf16\"} 1\n",
        "cai_kv_cache_bytes_per_token 73728\n", "cai_prompt_tokens_total 123\n", "cai_generation_tokens_total 67\n",
        "cai_prefix_cache_hit_tokens_total 45\n", "cai_preemptions_total 3\n", "cai_model_loaded 1\n"})
    EXPECT_NE(m.find(line), std::string::npos) << line << "\n" << m;
  // Every non-comment line is "name{labels} value".
  std::istringstream in(m);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#")) continue;
    EXPECT_NE(line.rfind(' '), std::string::npos) << line;
    EXPECT_TRUE(line.starts_with("cai_")) << line;
  }
}

}  // namespace
}  // namespace cai::server