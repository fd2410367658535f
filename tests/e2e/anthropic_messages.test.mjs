// E2E: the official `@anthropic-ai/sdk` client against a real `cai serve` (the built-in TinyStories model; stories260K
// for tool use):
// /v1/messages whole and streamed, thinking blocks, a tool_use → tool_result round trip, auth, count_tokens.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";

import { repoRoot, startServer, thinkTemplateFile } from "./server_harness.mjs";

const MODEL = "TinyStories-656K-Q8_0";  // the id `cai serve` derives from the file name
const KEY = "e2e-key";

describe("/v1/messages with TinyStories", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(["--api-key", KEY]);
    client = new Anthropic({ baseURL: server.origin, apiKey: KEY, maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  test("a plain message", async () => {
    const m = await client.messages.create({
      model: MODEL, max_tokens: 16, temperature: 0, messages: [{ role: "user", content: "Once upon a time" }],
    });
    assert.equal(m.type, "message");
    assert.equal(m.role, "assistant");
    assert.match(m.id, /^msg_/);
    assert.equal(m.model, MODEL);
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0].type, "text");
    assert.ok(m.content[0].text.length > 0);
    assert.ok(["end_turn", "max_tokens"].includes(m.stop_reason));
    assert.ok(m.usage.input_tokens > 0);
    assert.ok(m.usage.output_tokens >= 1 && m.usage.output_tokens <= 16);
    assert.equal(typeof m.usage.cache_read_input_tokens, "number");
  });

  test("streaming: Anthropic's event sequence, and the text of a non-streaming greedy run", async () => {
    const request = { model: MODEL, max_tokens: 24, temperature: 0,
                      messages: [{ role: "user", content: "Tom had a red ball." }] };
    const whole = await client.messages.create(request);
    const stream = await client.messages.create({ ...request, stream: true });
    const types = [];
    let text = "";
    let stopReason = null;
    let outputTokens = 0;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
      if (event.type === "message_delta") { stopReason = event.delta.stop_reason; outputTokens = event.usage.output_tokens; }
    }
    const blocks = types.filter((t) => t !== "ping");
    assert.equal(types[0], "message_start");
    assert.equal(blocks[1], "content_block_start");
    assert.deepEqual(blocks.slice(-3), ["content_block_stop", "message_delta", "message_stop"]);
    assert.ok(blocks.slice(2, -3).every((t) => t === "content_block_delta"), JSON.stringify(types));
    assert.ok(blocks.length - 5 >= 2, `expected a streamed reply, got ${JSON.stringify(types)}`);
    assert.equal(text, whole.content[0].text);
    assert.equal(stopReason, whole.stop_reason);
    assert.equal(outputTokens, whole.usage.output_tokens);

    // The SDK's own accumulator sees the same message.
    const final = await client.messages.stream(request).finalMessage();
    assert.equal(final.content[0].text, whole.content[0].text);
  });

  test("stop_sequences end the answer with stop_reason stop_sequence", async () => {
    const request = { model: MODEL, max_tokens: 48, temperature: 0,
                      messages: [{ role: "user", content: "Once upon a time" }] };
    const free = (await client.messages.create(request)).content[0].text;
    const words = free.trim().split(/\s+/);
    assert.ok(words.length >= 3, free);
    const stop = words[2];
    const m = await client.messages.create({ ...request, stop_sequences: [stop] });
    assert.equal(m.stop_reason, "stop_sequence");
    assert.equal(m.stop_sequence, stop);
    assert.equal(m.content[0]?.text ?? "", free.slice(0, free.indexOf(stop)));
  });

  test("count_tokens counts the prompt the message would use", async () => {
    const messages = [{ role: "user", content: "Lily saw a big dog." }];
    const counted = await client.messages.countTokens({ model: MODEL, messages, system: "Be kind." });
    const m = await client.messages.create({ model: MODEL, max_tokens: 1, messages, system: "Be kind." });
    assert.equal(counted.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
    assert.ok(counted.input_tokens > 5);
  });

  test("a wrong key is an AuthenticationError; Bearer auth works too", async () => {
    const wrong = new Anthropic({ baseURL: server.origin, apiKey: "nope", maxRetries: 0 });
    await assert.rejects(
      wrong.messages.create({ model: MODEL, max_tokens: 4, messages: [{ role: "user", content: "hi" }] }),
      (err) => err instanceof Anthropic.AuthenticationError && err.status === 401 &&
               err.error?.error?.type === "authentication_error");
    const bearer = new Anthropic({ baseURL: server.origin, authToken: KEY, apiKey: null, maxRetries: 0 });
    const m = await bearer.messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: "user", content: "hi" }] });
    assert.equal(m.type, "message");
  });

  test("bad requests are BadRequestErrors in Anthropic's shape", async () => {
    await assert.rejects(
      client.messages.create({ model: MODEL, max_tokens: 4, temperature: 1.5,
                               messages: [{ role: "user", content: "hi" }] }),
      (err) => err instanceof Anthropic.BadRequestError && err.error?.error?.type === "invalid_request_error" &&
               /temperature/.test(err.error.error.message));
    await assert.rejects(
      client.messages.create({ model: "no-such-model", max_tokens: 4, messages: [{ role: "user", content: "hi" }] }),
      (err) => err instanceof Anthropic.NotFoundError);
  });
});

// stories260K's vocabulary has byte tokens, so the grammar that forces a call can write any character (TinyStories-656K
// cannot spell the JSON the call needs).
describe("/v1/messages tool use with stories260K (no chat template: the server describes the tools)", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer([], { model: join(repoRoot, "tests", "data", "models", "stories260K.gguf"),
                                     ctxSize: 512 });
    client = new Anthropic({ baseURL: server.origin, apiKey: "unused", maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  const MODEL = "stories260K";  // the id `cai serve` derives from the file name

  // One forced call (no parallel calls): the grammar ends the answer after it, so the stop reason is tool_use.
  test("tool_use → tool_result round trip (tool_choice forces a call)", async () => {
    const tools = [{ name: "get_weather", description: "The weather in a city",
                     input_schema: { type: "object", properties: { city: { type: "string", enum: ["Paris", "Oslo"] } },
                                     required: ["city"], additionalProperties: false } }];
    const messages = [{ role: "user", content: "What is the weather in Paris?" }];
    const m = await client.messages.create({ model: MODEL, max_tokens: 64, temperature: 0, tools, messages,
                                             tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true } });
    const call = m.content.find((b) => b.type === "tool_use");
    assert.ok(call, JSON.stringify(m.content));
    assert.equal(m.stop_reason, "tool_use");
    assert.equal(call.name, "get_weather");
    assert.match(call.id, /^toolu_/);
    assert.deepEqual(Object.keys(call.input), ["city"]);
    assert.ok(["Paris", "Oslo"].includes(call.input.city), JSON.stringify(call.input));
    const answer = await client.messages.create({
      model: MODEL, max_tokens: 8, temperature: 0, tools,
      messages: [...messages, { role: "assistant", content: m.content },
                 { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "Sunny, 21 C" }] }],
    });
    assert.equal(answer.type, "message");
    assert.ok(["end_turn", "max_tokens", "tool_use"].includes(answer.stop_reason));

    // Streamed, the call arrives as input_json_delta pieces that reassemble into its input.
    const stream = await client.messages.create({ model: MODEL, max_tokens: 64, temperature: 0, tools, messages,
                                                  tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true }, stream: true });
    let partial = "";
    let started = null;
    for await (const event of stream) {
      if (event.type === "content_block_start" && event.content_block.type === "tool_use") started = event.content_block;
      if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") partial += event.delta.partial_json;
    }
    assert.equal(started?.name, "get_weather");
    assert.deepEqual(JSON.parse(partial), call.input);
  });
});

describe("/v1/messages: thinking blocks when the chat template opens <think>", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(["--chat-template", thinkTemplateFile(), "--served-model-name", "r1-like"]);
    client = new Anthropic({ baseURL: server.origin, apiKey: "unused", maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  // TinyStories never writes </think> (nor can its vocabulary spell it, so a thinking budget cannot close it): the
  // whole reply is reasoning.
  test("whole and streamed: the reasoning is a thinking block with a signature", async () => {
    const request = { model: "r1-like", max_tokens: 12, temperature: 0,
                      messages: [{ role: "user", content: "Once upon a time" }] };
    const m = await client.messages.create(request);
    assert.equal(m.content[0].type, "thinking");
    assert.ok(m.content[0].thinking.length > 0);
    assert.equal(typeof m.content[0].signature, "string");
    assert.ok(m.content[0].signature.length > 0);
    const final = await client.messages.stream(request).finalMessage();
    assert.equal(final.content[0].type, "thinking");
    assert.equal(final.content[0].thinking, m.content[0].thinking);
    assert.equal(final.content[0].signature, m.content[0].signature);
  });
});
