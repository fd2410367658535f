// E2E: the OpenAI Responses API (/v1/responses) with the official `openai` client and the OpenAI Agents SDK against a
// real `cai serve` on stories260K (its byte tokens can spell JSON): a response and its typed event stream, a forced
// function call answered through previous_response_id, structured output from a zod 4 schema (zodTextFormat and an
// agent's outputType), reading back and deleting a stored response; --log-prompts.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { Agent, run, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";

import { repoRoot, startServer } from "./server_harness.mjs";

const MODEL_PATH = join(repoRoot, "tests", "data", "models", "stories260K.gguf");
const MODEL = "stories260K";

const WEATHER = {
  type: "function",
  name: "get_weather",
  description: "Weather",
  strict: true,
  parameters: {
    type: "object",
    properties: { city: { type: "string", enum: ["Paris", "Oslo"] },
                  days: { type: "integer", minimum: 1, maximum: 7 } },
    required: ["city", "days"],
    additionalProperties: false,
  },
};
// What zod 4 writes for .int(), .positive(), an enum and a discriminated union.
const Forecast = z.object({
  city: z.enum(["Paris", "Oslo"]),
  days: z.number().int().positive().max(7),
  sky: z.discriminatedUnion("kind", [z.object({ kind: z.literal("sun") }),
                                     z.object({ kind: z.literal("rain"), mm: z.number().int().min(0).max(99) })]),
});

describe("the Responses API", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(["--log-prompts"], { model: MODEL_PATH, ctxSize: 512 });
    client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  test("a response, read back and deleted", async () => {
    const r = await client.responses.create({ model: MODEL, input: "Once upon a time", instructions: "Tell a story.",
                                              max_output_tokens: 8, temperature: 0 });
    assert.equal(r.object, "response");
    assert.match(r.id, /^resp_/);
    assert.ok(["completed", "incomplete"].includes(r.status), r.status);
    assert.ok(r.output_text.length > 0);
    assert.equal(r.usage.output_tokens, 8);
    assert.equal(r.instructions, "Tell a story.");
    // --log-prompts: the prompt as the model reads it, one line with the request id.
    assert.match(server.stderr(), /prompt request-id req_[0-9a-f]+ \(\d+ tokens\): "Tell a story\.\\n\\nOnce upon a time/);
    const again = await client.responses.retrieve(r.id);
    assert.deepEqual(again.output, r.output);
    await client.responses.delete(r.id);
    await assert.rejects(client.responses.retrieve(r.id), (e) => e.status === 404);
  });

  test("the event stream adds up to the final response", async () => {
    const stream = client.responses.stream({ model: MODEL, input: "Once upon a time", max_output_tokens: 12,
                                             temperature: 0 });
    const types = [];
    let text = "";
    let sequence = -1;
    for await (const event of stream) {
      types.push(event.type);
      assert.ok(event.sequence_number > sequence);
      sequence = event.sequence_number;
      if (event.type === "response.output_text.delta") text += event.delta;
    }
    const final = await stream.finalResponse();
    assert.equal(types[0], "response.created");
    assert.ok(["response.completed", "response.incomplete"].includes(types.at(-1)), types.at(-1));
    // The SDK adds output_text only to a completed response; this one may have stopped at max_output_tokens.
    const message = final.output.find((item) => item.type === "message");
    assert.equal(message.content[0].text, text);
    assert.ok(text.length > 0);
  });

  test("a forced function call, its output sent back by previous_response_id", async () => {
    const r = await client.responses.create({ model: MODEL, input: "What is the weather in Paris?", tools: [WEATHER],
                                              tool_choice: "required", parallel_tool_calls: false,
                                              max_output_tokens: 64, temperature: 0 });
    const calls = r.output.filter((item) => item.type === "function_call");
    assert.equal(calls.length, 1, JSON.stringify(r.output));
    assert.equal(calls[0].name, "get_weather");
    assert.match(calls[0].call_id, /^call_/);
    const args = JSON.parse(calls[0].arguments);
    assert.ok(["Paris", "Oslo"].includes(args.city) && Number.isInteger(args.days) && args.days >= 1 && args.days <= 7,
              calls[0].arguments);
    const answer = await client.responses.create({
      model: MODEL, previous_response_id: r.id, tools: [WEATHER], max_output_tokens: 8, temperature: 0,
      input: [{ type: "function_call_output", call_id: calls[0].call_id, output: "Sunny, 21 degrees." }],
    });
    assert.equal(answer.previous_response_id, r.id);
    assert.ok(answer.usage.input_tokens > r.usage.input_tokens, JSON.stringify([r.usage, answer.usage]));
    // An output that answers no call of the conversation is refused.
    await assert.rejects(client.responses.create({
      model: MODEL, input: [{ type: "function_call_output", call_id: "call_unknown", output: "x" }],
    }), (e) => e.status === 400 && e.param === "input[0].call_id");
  });

  test("structured output from a zod 4 schema (zodTextFormat)", async () => {
    const r = await client.responses.parse({ model: MODEL, input: "Weather?", max_output_tokens: 96, temperature: 0,
                                             text: { format: zodTextFormat(Forecast, "forecast") } });
    assert.equal(r.status, "completed", JSON.stringify(r.output));
    assert.deepEqual(Forecast.parse(r.output_parsed), r.output_parsed);
  });

  test("an OpenAI Agents SDK agent with an outputType", async () => {
    process.env.OPENAI_BASE_URL = server.baseURL;
    process.env.OPENAI_API_KEY = "unused";
    setTracingDisabled(true);
    const agent = new Agent({ name: "forecaster", instructions: "Give a forecast.", model: MODEL,
                              outputType: Forecast, modelSettings: { temperature: 0, maxTokens: 96 } });
    const answered = () => server.stderr().match(/POST \/v1\/responses 200/g)?.length ?? 0;
    const before = answered();
    const result = await run(agent, "Weather in Oslo?");
    assert.deepEqual(Forecast.parse(result.finalOutput), result.finalOutput);
    assert.equal(answered(), before + 1);  // through /v1/responses, the SDK's default API
  });
});
