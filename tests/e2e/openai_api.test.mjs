// E2E: the official `openai` client against a real `cai serve` with the built-in TinyStories model.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";

import { startServer, thinkTemplateFile } from "./server_harness.mjs";

const MODEL = "TinyStories-656K-Q8_0";  // the id `cai serve` derives from the file name

describe("cai serve with TinyStories (no chat template: plain-text fallback)", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer();
    client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  test("GET /v1/models lists the model", async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    assert.deepEqual(models, [MODEL]);
  });

  test("chat completion (non-streaming)", async () => {
    const r = await client.chat.completions.create({
      model: MODEL, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 16, temperature: 0,
    });
    assert.equal(r.object, "chat.completion");
    const choice = r.choices[0];
    assert.equal(choice.message.role, "assistant");
    assert.equal(typeof choice.message.content, "string");
    assert.ok(choice.message.content.length > 0, "empty reply");
    assert.ok(["stop", "length"].includes(choice.finish_reason));
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 16);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, "number");
  });

  test("chat completion (streaming) matches the non-streaming greedy reply", async () => {
    const request = { model: MODEL, messages: [{ role: "user", content: "Tom had a red ball." }], max_tokens: 24,
                      temperature: 0 };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true,
                                                          stream_options: { include_usage: true } });
    let text = "";
    let contentChunks = 0;
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      if (choice.delta.content) { text += choice.delta.content; contentChunks += 1; }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    assert.ok(contentChunks >= 2, `expected a streamed reply, got ${contentChunks} chunk(s)`);
    assert.equal(text, whole.choices[0].message.content);
    assert.equal(finish, whole.choices[0].finish_reason);
    assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
  });

  test("text completion, prompt as text and as token ids", async () => {
    const r = await client.completions.create({ model: MODEL, prompt: "Once upon a time", max_tokens: 8,
                                                temperature: 0 });
    assert.equal(r.object, "text_completion");
    assert.ok(r.choices[0].text.length > 0);
    assert.ok(r.usage.completion_tokens <= 8);
    const again = await client.completions.create({ model: MODEL, prompt: "Once upon a time", max_tokens: 8,
                                                    temperature: 0 });
    assert.equal(again.choices[0].text, r.choices[0].text, "greedy decoding must be deterministic");
    const ids = await client.completions.create({ model: MODEL, prompt: [1, 2, 3], max_tokens: 4 });
    assert.equal(ids.usage.prompt_tokens, 3);
  });

  test("errors are OpenAI error objects", async () => {
    await assert.rejects(
      client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], n: 17 }),
      (err) => err instanceof OpenAI.BadRequestError && err.status === 400 && err.param === "n");
    await assert.rejects(
      client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }),
      (err) => err instanceof OpenAI.NotFoundError && err.code === "model_not_found");
    await assert.rejects(
      client.completions.create({ model: MODEL, prompt: "x", max_tokens: 100000 }),
      (err) => err.status === 400 && err.code === "context_length_exceeded");
    const r = await fetch(`${server.baseURL}/chat/completions`, { method: "POST", body: "{oops",
                                                                  headers: { "content-type": "application/json" } });
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.type, "invalid_request_error");
  });

  test("/metrics counts the requests", async () => {
    const text = await (await fetch(`${server.origin}/metrics`)).text();
    assert.match(text, /cai_http_requests_total\{endpoint="\/v1\/chat\/completions",status="200"\} [1-9]/);
    assert.match(text, /cai_time_to_first_token_seconds_count [1-9]/);
    assert.match(text, /cai_kv_blocks_free \d+/);
  });
});

describe("reasoning_content when the chat template opens <think>", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(["--chat-template", thinkTemplateFile(), "--model-name", "r1-like"]);
    client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  // TinyStories never writes </think>, so the whole reply is reasoning (the unclosed-think case).
  test("non-streaming: the reply goes to message.reasoning_content", async () => {
    const r = await client.chat.completions.create({
      model: "r1-like", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 12, temperature: 0,
    });
    const msg = r.choices[0].message;
    assert.ok(msg.reasoning_content && msg.reasoning_content.length > 0, JSON.stringify(msg));
    assert.equal(msg.content, "");
  });

  test("streaming: delta.reasoning_content", async () => {
    const stream = await client.chat.completions.create({
      model: "r1-like", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 12, temperature: 0,
      stream: true,
    });
    let reasoning = "";
    let content = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta ?? {};
      reasoning += delta.reasoning_content ?? "";
      content += delta.content ?? "";
    }
    assert.ok(reasoning.length > 0);
    assert.equal(content, "");
  });
});

describe("overload: --max-queue 4 --max-batch 2", () => {
  let server;
  before(async () => { server = await startServer(["--max-queue", "4", "--max-batch", "2"]); });
  after(async () => { assert.equal(await server.stop(), 0); });

  test("64 concurrent requests: the excess gets 429 with Retry-After, the rest complete", async () => {
    const body = JSON.stringify({ messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 48,
                                  ignore_eos: true });
    const replies = await Promise.all(Array.from({ length: 64 }, async () => {
      const r = await fetch(`${server.baseURL}/chat/completions`, {
        method: "POST", headers: { "Content-Type": "application/json" }, body,
      });
      const json = await r.json();
      return { status: r.status, retryAfter: r.headers.get("retry-after"), json };
    }));
    const busy = replies.filter((r) => r.status === 429);
    const ok = replies.filter((r) => r.status === 200);
    assert.equal(busy.length + ok.length, 64, JSON.stringify(replies.map((r) => r.status)));
    assert.ok(busy.length > 0, "no request was refused");
    assert.ok(ok.length >= 4, `only ${ok.length} completed`);  // at least what the queue holds
    for (const r of busy) {
      assert.equal(r.retryAfter, "1");
      assert.equal(r.json.error.code, "rate_limit_exceeded");
    }
    for (const r of ok) assert.equal(r.json.usage.completion_tokens, 48);
    const metrics = await (await fetch(`${server.origin}/metrics`)).text();
    assert.match(metrics, /cai_http_requests_total\{endpoint="\/v1\/chat\/completions",status="429"\} [1-9]/);
  });
});
