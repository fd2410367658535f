// E2E: the Vercel AI SDK (`ai` with @ai-sdk/openai-compatible on /v1/chat/completions and @ai-sdk/anthropic on
// /v1/messages) and LangChain (@langchain/openai, @langchain/anthropic) against a real `cai serve` on stories260K (its
// byte tokens can spell JSON; it knows no tools and no JSON, so every call and object comes from the server's grammar):
// text whole and streamed, a tool call forced by toolChoice and its result sent back for an answer, generateObject /
// streamObject and withStructuredOutput on a zod 4 schema (.int(), .positive(), an enum, a discriminated union), each
// checked with that schema. Each client gets a `fetch` that records its requests, so the tests also check which
// endpoint and fields each library used, and hold an answer to the schema a client really sent where it loosens it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatAnthropic } from "@langchain/anthropic";
import { ChatOpenAI } from "@langchain/openai";
import { generateObject, generateText, NoObjectGeneratedError, stepCountIs, streamObject, streamText, tool } from "ai";
import Ajv from "ajv";
import { z } from "zod";

import { repoRoot, startServer } from "./server_harness.mjs";

const MODEL_PATH = join(repoRoot, "tests", "data", "models", "stories260K.gguf");
const MODEL = "stories260K";  // the id `cai serve` derives from the file name
// A described tool makes a prompt of several hundred byte tokens; the model's GGUF allows 2048.
const CTX_SIZE = 2048;

const WeatherInput = z.object({ city: z.enum(["Paris", "Oslo"]), days: z.number().int().min(1).max(7) });
// What zod 4 writes for .int(), .positive(), an enum and a discriminated union.
const Forecast = z.object({
  city: z.enum(["Paris", "Oslo"]),
  days: z.number().int().positive().max(7),
  sky: z.discriminatedUnion("kind", [z.object({ kind: z.literal("sun") }),
                                     z.object({ kind: z.literal("rain"), mm: z.number().int().min(0).max(99) })]),
});

// A fetch that keeps { path, body } of each request it passes on.
function recordingFetch() {
  const requests = [];
  const record = (url, init) => {
    requests.push({ path: new URL(url instanceof Request ? url.url : url).pathname,
                    body: typeof init?.body === "string" ? JSON.parse(init.body) : undefined });
    return fetch(url, init);
  };
  return { fetch: record, requests };
}

// `value` is a valid Forecast: zod's parse gives it back unchanged.
function checkForecast(value) {
  assert.deepEqual(Forecast.parse(value), value, JSON.stringify(value));
}

// Each AI SDK provider: its model over a recording fetch, its endpoint, the provider options that allow one tool call
// per answer, and a check of the request generateObject made.
const PROVIDERS = [
  {
    name: "@ai-sdk/openai-compatible",
    path: "/v1/chat/completions",
    // supportsStructuredOutputs: send the schema as response_format json_schema (else only json_object); includeUsage:
    // ask for usage in a stream (stream_options.include_usage).
    model: (server, fetch) => createOpenAICompatible({ name: "cai", baseURL: server.baseURL, fetch,
                                                        supportsStructuredOutputs: true, includeUsage: true })(MODEL),
    oneCall: { cai: { parallel_tool_calls: false } },  // unknown provider options go into the request body
    checkObjectRequest: (body) => {
      assert.equal(body.response_format.type, "json_schema");
      assert.equal(body.response_format.json_schema.strict, true);
      assert.deepEqual(body.response_format.json_schema.schema.properties.city.enum, ["Paris", "Oslo"]);
    },
  },
  {
    name: "@ai-sdk/anthropic",
    path: "/v1/messages",
    model: (server, fetch) => createAnthropic({ baseURL: server.baseURL, apiKey: "unused", fetch })(MODEL),
    oneCall: { anthropic: { disableParallelToolUse: true } },
    // For a model it does not know the provider asks for a forced "json" tool whose input is the object.
    checkObjectRequest: (body) => {
      assert.equal(body.tools.length, 1);
      assert.equal(body.tools[0].name, "json");
      assert.deepEqual(body.tools[0].input_schema.properties.city.enum, ["Paris", "Oslo"]);
      assert.deepEqual(body.tool_choice, { type: "any", disable_parallel_tool_use: true });
    },
  },
];

describe("the Vercel AI SDK and LangChain on stories260K", () => {
  let server;
  before(async () => { server = await startServer([], { model: MODEL_PATH, ctxSize: CTX_SIZE }); });
  after(async () => { assert.equal(await server.stop(), 0); });

  for (const provider of PROVIDERS) {
    describe(`AI SDK with ${provider.name}`, () => {
      let model;
      let requests;
      before(() => {
        const recorder = recordingFetch();
        model = provider.model(server, recorder.fetch);
        requests = recorder.requests;
      });

      test("generateText and streamText: the same greedy text", async () => {
        const request = { model, prompt: "Once upon a time", temperature: 0, maxOutputTokens: 12 };
        const whole = await generateText(request);
        assert.deepEqual(whole.warnings, []);
        assert.ok(whole.text.length > 0);
        assert.ok(["stop", "length"].includes(whole.finishReason), whole.finishReason);
        assert.ok(whole.usage.inputTokens > 0);
        assert.ok(whole.usage.outputTokens >= 1 && whole.usage.outputTokens <= 12, JSON.stringify(whole.usage));
        const stream = streamText(request);
        const deltas = [];
        for await (const delta of stream.textStream) deltas.push(delta);
        assert.ok(deltas.length >= 2, JSON.stringify(deltas));
        assert.equal(deltas.join(""), whole.text);
        assert.equal(await stream.finishReason, whole.finishReason);
        assert.equal((await stream.usage).outputTokens, whole.usage.outputTokens);
        assert.deepEqual(requests.slice(-2).map((r) => [r.path, r.body.stream ?? false]),
                         [[provider.path, false], [provider.path, true]]);
        assert.deepEqual(await stream.warnings, []);
      });

      test('streamText, toolChoice "required": one call, executed, its result sent back for an answer', async () => {
        const executed = [];
        const getWeather = tool({ description: "Weather", inputSchema: WeatherInput,
                                  execute: async (input) => { executed.push(input); return "Sunny, 21 degrees."; } });
        const stream = streamText({
          model, prompt: "What is the weather in Paris?", temperature: 0, maxOutputTokens: 64,
          tools: { get_weather: getWeather }, toolChoice: "required", providerOptions: provider.oneCall,
          stopWhen: stepCountIs(2), prepareStep: ({ stepNumber }) => (stepNumber === 1 ? { toolChoice: "none" } : {}),
        });
        const types = [];
        let inputDeltas = 0;
        for await (const part of stream.fullStream) {
          types.push(part.type);
          if (part.type === "tool-input-delta" && part.delta.length > 0) ++inputDeltas;
        }
        const steps = await stream.steps;
        assert.equal(steps.length, 2, JSON.stringify(types));
        const [call, answer] = steps;
        assert.equal(call.finishReason, "tool-calls");
        assert.equal(call.text, "");
        assert.equal(call.toolCalls.length, 1);
        assert.equal(call.toolCalls[0].toolName, "get_weather");
        assert.deepEqual(WeatherInput.parse(call.toolCalls[0].input), call.toolCalls[0].input);
        assert.deepEqual(executed, [call.toolCalls[0].input]);
        assert.deepEqual(call.toolResults.map((r) => r.output), ["Sunny, 21 degrees."]);
        assert.ok(types.includes("tool-input-delta") && types.includes("tool-result"), JSON.stringify(types));
        assert.equal(answer.toolCalls.length, 0);
        assert.ok(answer.text.length > 0);
        assert.ok(["stop", "length"].includes(answer.finishReason), answer.finishReason);
        // The second request carries the call and its result back to the server.
        const sent = JSON.stringify(requests.at(-1).body.messages);
        assert.ok(sent.includes(call.toolCalls[0].toolCallId) && sent.includes("Sunny, 21 degrees."), sent);
        // The arguments stream as the model writes them (OpenAI's function.arguments deltas, Anthropic's
        // input_json_delta; the provider asks for the latter with eager_input_streaming), not at once when done.
        assert.ok(inputDeltas >= 2, `the call's input came in ${inputDeltas} delta(s): ` +
                  JSON.stringify(types.filter((t) => t !== "text-delta")));
      });

      test("generateText, a named tool among two: exactly that tool is called", async () => {
        const tools = { now: tool({ description: "The time", inputSchema: z.object({}) }),
                        get_weather: tool({ description: "Weather", inputSchema: WeatherInput }) };
        const r = await generateText({ model, prompt: "Weather?", temperature: 0, maxOutputTokens: 64, tools,
                                       toolChoice: { type: "tool", toolName: "get_weather" },
                                       providerOptions: provider.oneCall });
        assert.equal(r.finishReason, "tool-calls");
        assert.equal(r.toolCalls.length, 1);
        assert.equal(r.toolCalls[0].toolName, "get_weather");
        assert.deepEqual(WeatherInput.parse(r.toolCalls[0].input), r.toolCalls[0].input);
        assert.equal(r.text, "");
      });

      test("generateObject and streamObject: the same zod-valid object", async () => {
        const request = { model, schema: Forecast, prompt: "Weather?", temperature: 0, maxOutputTokens: 128 };
        const whole = await generateObject(request);
        checkForecast(whole.object);
        assert.equal(whole.finishReason, "stop");
        provider.checkObjectRequest(requests.at(-1).body);
        const stream = streamObject(request);
        const partials = [];
        for await (const partial of stream.partialObjectStream) partials.push(partial);
        assert.deepEqual(await stream.object, whole.object);
        assert.deepEqual(partials.at(-1), whole.object);
        provider.checkObjectRequest(requests.at(-1).body);
        assert.equal(requests.at(-1).body.stream, true);
        // The object grows as it streams (Anthropic: as the "json" tool's input streams).
        assert.ok(partials.length >= 2, `${partials.length} partial object(s): ${JSON.stringify(partials)}`);
      });
    });
  }

  // In this mode the provider sends Anthropic's subset of JSON Schema: it moves the bounds of `days` and `mm` into
  // descriptions, so the server cannot hold the model to them and zod may reject the answer. What the server must
  // hold it to is the schema sent.
  test('AI SDK, @ai-sdk/anthropic, structuredOutputMode "outputFormat": the answer fits the schema sent', async () => {
    const { fetch, requests } = recordingFetch();
    const model = createAnthropic({ baseURL: server.baseURL, apiKey: "unused", fetch })(MODEL);
    const text = await generateObject({ model, schema: Forecast, prompt: "Weather?", temperature: 0,
                                        maxOutputTokens: 128,
                                        providerOptions: { anthropic: { structuredOutputMode: "outputFormat" } } })
      .then((r) => JSON.stringify(r.object), (e) => {
        if (!NoObjectGeneratedError.isInstance(e)) throw e;
        return e.text;
      });
    const body = requests.at(-1).body;
    assert.equal(body.tools, undefined);
    assert.equal(body.output_config.format.type, "json_schema");
    const ajv = new Ajv({ strict: false });
    const sent = body.output_config.format.schema;
    assert.ok(ajv.validate(sent, JSON.parse(text)), `${text} → ${ajv.errorsText()}`);
    assert.deepEqual(sent.properties.city.enum, ["Paris", "Oslo"]);
  });

  describe("LangChain", () => {
    test("ChatOpenAI.withStructuredOutput: the default (json_schema) and functionCalling methods", async () => {
      const { fetch, requests } = recordingFetch();
      const chat = new ChatOpenAI({ model: MODEL, apiKey: "unused", temperature: 0, maxTokens: 128, maxRetries: 0,
                                    configuration: { baseURL: server.baseURL, fetch } });
      const byDefault = await chat.withStructuredOutput(Forecast).invoke("Weather?");
      checkForecast(byDefault);
      assert.equal(requests.at(-1).path, "/v1/chat/completions");
      assert.equal(requests.at(-1).body.response_format.type, "json_schema");
      assert.equal(requests.at(-1).body.tools, undefined);

      const byTool = await chat.withStructuredOutput(Forecast, { method: "functionCalling" }).invoke("Weather?");
      checkForecast(byTool);
      assert.equal(requests.at(-1).path, "/v1/chat/completions");
      assert.deepEqual(requests.at(-1).body.tool_choice, { type: "function", function: { name: "extract" } });
      assert.equal(requests.at(-1).body.response_format, undefined);
    });

    test("ChatAnthropic.withStructuredOutput: the default method, a forced tool", async () => {
      const { fetch, requests } = recordingFetch();
      const chat = new ChatAnthropic({ model: MODEL, apiKey: "unused", temperature: 0, maxTokens: 128, maxRetries: 0,
                                       anthropicApiUrl: server.origin, clientOptions: { fetch } });
      checkForecast(await chat.withStructuredOutput(Forecast).invoke("Weather?"));
      assert.equal(requests.at(-1).path, "/v1/messages");
      assert.deepEqual(requests.at(-1).body.tool_choice, { type: "tool", name: "extract" });
      assert.deepEqual(requests.at(-1).body.tools[0].input_schema.properties.city.enum, ["Paris", "Oslo"]);
    });

    // The jsonSchema method sends output_config.format through @anthropic-ai/sdk's transformJSONSchema, which keeps
    // types, objects and unions but moves enum, const and numeric bounds into descriptions: zod may then reject the
    // answer, and the server can only be held to the schema sent.
    test("ChatAnthropic.withStructuredOutput, jsonSchema method: the answer fits output_config.format", async () => {
      const { fetch, requests } = recordingFetch();
      const chat = new ChatAnthropic({ model: MODEL, apiKey: "unused", temperature: 0, maxTokens: 128, maxRetries: 0,
                                       anthropicApiUrl: server.origin, clientOptions: { fetch } });
      const structured = chat.withStructuredOutput(Forecast, { method: "jsonSchema", includeRaw: true });
      const r = await structured.invoke("Weather?");
      const body = requests.at(-1).body;
      assert.equal(requests.at(-1).path, "/v1/messages");
      assert.equal(body.tools, undefined);
      assert.equal(body.output_config.format.type, "json_schema");
      assert.equal(r.raw.response_metadata.stop_reason, "end_turn");
      const text = typeof r.raw.content === "string" ? r.raw.content : r.raw.content.map((b) => b.text).join("");
      const value = JSON.parse(text);
      const ajv = new Ajv({ strict: false });
      assert.ok(ajv.validate(body.output_config.format.schema, value), `${text} → ${ajv.errorsText()}`);
      // LangChain hands back what zod accepts, else null.
      assert.deepEqual(r.parsed, Forecast.safeParse(value).success ? value : null);
    });
  });
});
