// E2E: tool calling with the official `openai` client against a real `cai serve` on a TinyStories model, which knows
// nothing of tools: tool_choice "required" / a named function must still yield valid calls (forced by the grammar),
// streamed as delta.tool_calls, and the tool result must go back into the conversation. The model is stories260K:
// its byte tokens can spell the braces and quotes of a call (TinyStories-656K's vocabulary cannot write "{").
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";

import { repoRoot, startServer } from "./server_harness.mjs";

const MODEL_PATH = join(repoRoot, "tests", "data", "models", "stories260K.gguf");
const MODEL = "stories260K";  // the id `cai serve` derives from the file name

const WEATHER = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string", enum: ["Paris", "Oslo"] }, days: { type: "integer", minimum: 1, maximum: 7 } },
      required: ["city", "days"],
      additionalProperties: false,
    },
  },
};
const TIME = { type: "function", function: { name: "now" } };

// The arguments of a get_weather call, checked against its schema by hand.
function checkWeatherArguments(text) {
  const args = JSON.parse(text);
  assert.deepEqual(Object.keys(args).sort(), ["city", "days"]);
  assert.ok(["Paris", "Oslo"].includes(args.city), text);
  assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, text);
  return args;
}

describe("tool calls on TinyStories (no chat template: the server describes the tools)", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer([], { model: MODEL_PATH, ctxSize: 512 });
    client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  test("round trip: a required call, its result sent back as a tool message, an answer", async () => {
    const user = { role: "user", content: "What is the weather in Paris?" };
    const r = await client.chat.completions.create({
      model: MODEL, messages: [user], tools: [WEATHER, TIME], tool_choice: "required", max_tokens: 64,
      temperature: 0, parallel_tool_calls: false,  // greedy, this model would repeat calls until max_tokens
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, "tool_calls");
    assert.equal(choice.message.content, null);
    assert.ok(choice.message.tool_calls.length >= 1);
    for (const call of choice.message.tool_calls) {
      assert.equal(call.type, "function");
      assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
      assert.ok(["get_weather", "now"].includes(call.function.name));
      if (call.function.name === "get_weather") checkWeatherArguments(call.function.arguments);
      else assert.equal(typeof JSON.parse(call.function.arguments), "object");
    }
    const results = choice.message.tool_calls.map((call) => ({ role: "tool", tool_call_id: call.id,
                                                               content: "Sunny, 21 degrees." }));
    const answer = await client.chat.completions.create({
      model: MODEL, messages: [user, choice.message, ...results], tools: [WEATHER, TIME], max_tokens: 16,
      temperature: 0,
    });
    assert.ok(["stop", "length"].includes(answer.choices[0].finish_reason));
    assert.equal(typeof answer.choices[0].message.content, "string");
    assert.ok(answer.choices[0].message.content.length > 0);
    assert.equal(answer.choices[0].message.tool_calls, undefined);
  });

  test("a named function with parallel_tool_calls false: exactly that one call", async () => {
    const r = await client.chat.completions.create({
      model: MODEL, messages: [{ role: "user", content: "Weather?" }], tools: [TIME, WEATHER],
      tool_choice: { type: "function", function: { name: "get_weather" } }, parallel_tool_calls: false,
      max_tokens: 64, temperature: 0.8, seed: 7,
    });
    const calls = r.choices[0].message.tool_calls;
    assert.equal(calls.length, 1);
    assert.equal(calls[0].function.name, "get_weather");
    checkWeatherArguments(calls[0].function.arguments);
  });

  test("streamed tool-call deltas reassemble to the non-streamed call", async () => {
    const request = {
      model: MODEL, messages: [{ role: "user", content: "Weather in Oslo for two days?" }], tools: [WEATHER],
      tool_choice: { type: "function", function: { name: "get_weather" } }, max_tokens: 64, temperature: 0,
      parallel_tool_calls: false,
    };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true });
    const calls = [];
    let finish = null;
    let content = "";
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      content += choice.delta.content ?? "";
      for (const piece of choice.delta.tool_calls ?? []) {
        if (piece.id !== undefined) {  // a call's first chunk: id, type, name, no arguments yet
          assert.equal(piece.index, calls.length);
          assert.equal(piece.type, "function");
          assert.equal(piece.function.arguments, "");
          calls.push({ id: piece.id, name: piece.function.name, arguments: "" });
        } else {
          assert.equal(piece.function.name, undefined);
          calls[piece.index].arguments += piece.function.arguments;
        }
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    assert.equal(finish, "tool_calls");
    assert.equal(content, "");
    const expected = whole.choices[0].message.tool_calls;
    assert.equal(calls.length, expected.length);
    for (let i = 0; i < calls.length; i++) {
      assert.equal(calls[i].name, expected[i].function.name);
      assert.deepEqual(checkWeatherArguments(calls[i].arguments), checkWeatherArguments(expected[i].function.arguments));
    }
  });

  test('tool_choice "none" offers no tools: the prompt is that of a request without them', async () => {
    const messages = [{ role: "user", content: "Once upon a time" }];
    const base = { model: MODEL, messages, max_tokens: 8, temperature: 0 };
    const plain = await client.chat.completions.create(base);
    const none = await client.chat.completions.create({ ...base, tools: [WEATHER], tool_choice: "none" });
    const auto = await client.chat.completions.create({ ...base, tools: [WEATHER] });
    assert.equal(none.usage.prompt_tokens, plain.usage.prompt_tokens);
    assert.equal(none.choices[0].message.content, plain.choices[0].message.content);
    assert.equal(none.choices[0].message.tool_calls, undefined);
    assert.ok(auto.usage.prompt_tokens > plain.usage.prompt_tokens, "auto describes the tools in the prompt");
  });

  test("a bad tool definition or tool_choice is a 400 naming the field", async () => {
    const bad = [
      [{ tools: [{ type: "function", function: { name: "get weather" } }] }, "tools[0].function.name"],
      [{ tools: [{ type: "function", function: { name: "f", parameters: { type: "array" } } }] },
       "tools[0].function.parameters"],
      [{ tools: [WEATHER], tool_choice: { type: "function", function: { name: "nope" } } }, "tool_choice"],
      [{ tool_choice: "required" }, "tool_choice"],
    ];
    for (const [fields, param] of bad) {
      await assert.rejects(
        client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], ...fields }),
        (err) => err instanceof OpenAI.BadRequestError && err.status === 400 && err.param === param,
        JSON.stringify(fields));
    }
  });
});
