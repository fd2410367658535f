// /v1/responses over HTTP with a scripted engine: a response, its stream, reading and deleting it back, continuing it
// by previous_response_id, and refusals in OpenAI's shape.
#include "named_sse.h"
#include "server_fixture.h"

namespace cai::server::test_support {
namespace {

class ResponsesRoutesTest : public ServerTest {
 protected:
  // The prompt the engine got for its `i`-th request, as text.
  std::string prompt_text(size_t i) {
    const std::vector<GenerationRequest> reqs = engine_->requests();
    EXPECT_GT(reqs.size(), i);
    return reqs.size() > i ? engine_->model().tokenizer->decode(reqs[i].prompt) : std::string();
  }
};

TEST_F(ResponsesRoutesTest, AnswersReadsBackAndDeletesAResponse) {
  start();
  auto r = post("/v1/responses", R"({"model": "tiny", "input": "Hello", "instructions": "Be kind."})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json resp = json::parse(r->body);
  EXPECT_TRUE(resp["id"].get<std::string>().starts_with("resp_"));
  EXPECT_EQ(resp["object"], "response");
  EXPECT_EQ(resp["status"], "completed");
  EXPECT_EQ(resp["model"], "tiny");
  EXPECT_EQ(resp["instructions"], "Be kind.");
  ASSERT_EQ(resp["output"].size(), 1u);
  EXPECT_EQ(resp["output"][0]["content"][0]["text"], "Once upon a time");
  EXPECT_EQ(resp["usage"]["output_tokens"], 4);
  EXPECT_NE(prompt_text(0).find("Be kind."), std::string::npos);

  const std::string path = "/v1/responses/" + resp["id"].get<std::string>();
  auto got = client_->Get(path.c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(json::parse(got->body), resp);
  auto del = client_->Delete(path.c_str());
  ASSERT_TRUE(del);
  EXPECT_EQ(json::parse(del->body)["deleted"], true);
  got = client_->Get(path.c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 404);
  EXPECT_EQ(error_of(got)["code"], "response_not_found");
}

TEST_F(ResponsesRoutesTest, StreamsTypedEventsEndingWithCompleted) {
  start();
  auto r = post("/v1/responses", R"({"input": "Hello", "stream": true})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::string body;  // keep-alive comments may come between events while the engine starts
  for (size_t pos = 0; pos < r->body.size();) {
    const size_t end = r->body.find("\n\n", pos) + 2;
    if (r->body[pos] != ':') body += r->body.substr(pos, end - pos);
    pos = end;
  }
  const std::vector<SseEvent> events = parse_named_events(body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.front().name, "response.created");
  EXPECT_EQ(events.back().name, "response.completed");
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].data["sequence_number"], i);
    if (events[i].name == "response.output_text.delta") text += events[i].data["delta"].get<std::string>();
  }
  EXPECT_EQ(text, "Once upon a time");
}

// The second request names the first: its prompt holds the first request's input and answer, and its own instructions
// only.
TEST_F(ResponsesRoutesTest, PreviousResponseIdCarriesTheConversation) {
  start({}, true, 256);
  auto first = post("/v1/responses", R"({"input": "Tell a story", "instructions": "First rules."})");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  const std::string id = json::parse(first->body)["id"];
  auto second = post("/v1/responses",
                     R"({"input": "Again", "instructions": "Second rules.", "previous_response_id": ")" + id + R"("})");
  ASSERT_TRUE(second);
  ASSERT_EQ(second->status, 200) << second->body;
  EXPECT_EQ(json::parse(second->body)["previous_response_id"], id);
  const std::string prompt = prompt_text(1);
  for (const char* part : {"Tell a story", "Once upon a time", "Again", "Second rules."})
    EXPECT_NE(prompt.find(part), std::string::npos) << part << " in " << prompt;
  EXPECT_EQ(prompt.find("First rules."), std::string::npos) << prompt;
  // Not stored: cannot be continued.
  auto unstored = post("/v1/responses", R"({"input": "x", "store": false})");
  ASSERT_TRUE(unstored);
  const std::string unstored_id = json::parse(unstored->body)["id"];
  auto refused = post("/v1/responses", R"({"input": "y", "previous_response_id": ")" + unstored_id + R"("})");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_EQ(error_of(refused)["code"], "previous_response_not_found");
}

TEST_F(ResponsesRoutesTest, RefusalsComeInOpenAIsShape) {
  start();
  auto r = post("/v1/responses", R"({"model": "gpt-5", "input": "x"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(error_of(r)["code"], "model_not_found");
  r = post("/v1/responses", "{not json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = post("/v1/responses", R"({"input": "x", "max_output_tokens": 100000})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(error_of(r)["code"], "context_length_exceeded");
  EXPECT_EQ(error_of(r)["param"], "input");
  EXPECT_EQ(engine_->requests().size(), 0u);
}

// A forced call whose schema the grammar cannot express names that schema where this request holds it.
TEST_F(ResponsesRoutesTest, AnInexpressibleForcedToolSchemaIsNamedByItsField) {
  start({}, true, 4096);
  auto r = post("/v1/responses", R"({"input": "x", "tool_choice": "required", "tools": [
      {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "f", "parameters": {"type": "object",
          "properties": {"a": {"not": {"type": "string"}}}}}]}]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_TRUE(error_of(r)["message"].get<std::string>().starts_with("tools[0].tools[0].parameters: not")) << r->body;
}

TEST_F(ResponsesRoutesTest, EngineLengthIsAnIncompleteResponse) {
  start();
  engine_->script.finish = FinishReason::kLength;
  auto r = post("/v1/responses", R"({"input": "x", "max_output_tokens": 4})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["status"], "incomplete");
  EXPECT_EQ(json::parse(r->body)["incomplete_details"]["reason"], "max_output_tokens");
}

}  // namespace
}  // namespace cai::server::test_support
