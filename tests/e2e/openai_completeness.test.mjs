// E2E: the official `openai` client against a real `cai serve`: n choices (whole and streamed), model aliases from
// --served-model-name and from a --config file, a logit_bias ban, stop strings across tokens, echo with prompt logprobs
// (how lm-evaluation-harness scores), and the reasoning budget on a model whose chat template opens <think>.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";

import { repoRoot, startServer, tempDir, thinkTemplateFile } from "./server_harness.mjs";

const PROMPT = [{ role: "user", content: "Once upon a time" }];

describe("n, aliases, logit_bias and stop strings (TinyStories, --served-model-name)", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(["--served-model-name", "tiny,tiny-alias,gpt-4o-mini"]);
    client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  test("/v1/models lists every alias and each one is served", async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    assert.deepEqual(models, ["tiny", "tiny-alias", "gpt-4o-mini"]);
    for (const model of models) {
      const r = await client.chat.completions.create({ model, messages: PROMPT, max_tokens: 4 });
      assert.equal(r.model, model);
    }
    await assert.rejects(
      client.chat.completions.create({ model: "gpt-5", messages: PROMPT }),
      (err) => err instanceof OpenAI.NotFoundError && err.code === "model_not_found" &&
               /'tiny', 'tiny-alias', 'gpt-4o-mini'/.test(err.message));
  });

  test("n: 3 gives three choices, reproducible with a seed", async () => {
    const request = { model: "tiny", messages: PROMPT, max_tokens: 16, temperature: 1, seed: 9, n: 3,
                      ignore_eos: true };
    const r = await client.chat.completions.create(request);
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
    const texts = r.choices.map((c) => c.message.content);
    assert.equal(new Set(texts).size, 3, JSON.stringify(texts));
    assert.equal(r.usage.completion_tokens, 48);
    const again = await client.chat.completions.create(request);
    assert.deepEqual(again.choices.map((c) => c.message.content), texts);
    const completions = await client.completions.create({ model: "tiny", prompt: "Once upon a time", max_tokens: 8,
                                                          n: 3, seed: 1 });
    assert.equal(completions.choices.length, 3);
    await assert.rejects(client.chat.completions.create({ model: "tiny", messages: PROMPT, n: 17 }),
                         (err) => err.status === 400 && err.param === "n");
  });

  test("n: 3 streamed: chunks per index, each choice ends, usage once", async () => {
    const request = { model: "tiny", messages: PROMPT, max_tokens: 12, temperature: 1, seed: 4, n: 3,
                      ignore_eos: true };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true,
                                                          stream_options: { include_usage: true } });
    const text = ["", "", ""];
    const finish = [null, null, null];
    let usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        assert.equal(finish[choice.index], null, `a chunk for choice ${choice.index} after its finish`);
        text[choice.index] += choice.delta.content ?? "";
        finish[choice.index] = choice.finish_reason;
      }
    }
    assert.deepEqual(text, whole.choices.map((c) => c.message.content));
    assert.deepEqual(finish, ["length", "length", "length"]);
    assert.equal(usage.completion_tokens, 36);
    assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
  });

  // Each prompt token's echoed logprob is the logprob the model gives that token when it writes it after the tokens
  // before it (forced by logit_bias: reported logprobs are the model's own, before any bias).
  test("echo with logprobs and max_tokens 0 scores the prompt as generation does", async () => {
    const ids = [1, 57, 301, 88, 412, 9];
    const scored = await client.completions.create({ model: "tiny", prompt: ids, max_tokens: 0, echo: true,
                                                     logprobs: 1 });
    const choice = scored.choices[0];
    assert.equal(choice.finish_reason, "length");
    assert.equal(scored.usage.completion_tokens, 0);
    const lp = choice.logprobs;
    assert.equal(lp.tokens.length, ids.length);
    assert.equal(lp.token_logprobs[0], null);
    assert.equal(lp.top_logprobs[0], null);
    assert.equal(choice.text, lp.tokens.join(""));
    for (let k = 1; k < ids.length; ++k) {
      const written = await client.completions.create({ model: "tiny", prompt: ids.slice(0, k), max_tokens: 1,
                                                        logprobs: 0, logit_bias: { [ids[k]]: 100 } });
      const w = written.choices[0].logprobs;
      assert.equal(w.tokens[0], lp.tokens[k]);
      assert.ok(Math.abs(w.token_logprobs[0] - lp.token_logprobs[k]) < 1e-4,
                `${k}: ${w.token_logprobs[0]} vs ${lp.token_logprobs[k]}`);
    }
    // Echo also prefixes generated text; max_tokens 0 without echo, and echo on chat, are refused.
    const echoed = await client.completions.create({ model: "tiny", prompt: "Once", max_tokens: 3, echo: true,
                                                     temperature: 0 });
    assert.ok(echoed.choices[0].text.startsWith("Once") && echoed.choices[0].text.length > 4);
    await assert.rejects(client.completions.create({ model: "tiny", prompt: "Once", max_tokens: 0 }),
                         (err) => err.status === 400 && err.param === "max_tokens");
    await assert.rejects(client.chat.completions.create({ model: "tiny", messages: PROMPT, echo: true }),
                         (err) => err.status === 400 && err.param === "echo");
  });

  test("logit_bias -100 bans a token the greedy reply used", async () => {
    const request = { model: "tiny", prompt: "Once upon a time", max_tokens: 24, temperature: 0, logprobs: 0 };
    let vocab = 0;
    await assert.rejects(client.completions.create({ ...request, logit_bias: { "99999999": 1 } }), (err) => {
      vocab = Number(/the vocabulary has (\d+) tokens/.exec(err.message)?.[1]);
      return err.status === 400 && err.param === "logit_bias" && /'99999999'/.test(err.message);
    });
    const plain = await client.completions.create(request);
    const first = plain.choices[0].logprobs.tokens[0];
    // The id of the first greedy token: +100 on a range of ids keeps it first exactly when the range holds it.
    const firstWith = async (lo, hi) => {
      const bias = Object.fromEntries(Array.from({ length: hi - lo }, (_, k) => [String(lo + k), 100]));
      const r = await client.completions.create({ ...request, max_tokens: 1, logit_bias: bias });
      return r.choices[0].logprobs.tokens[0];
    };
    let [lo, hi] = [0, vocab];
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (await firstWith(lo, mid) === first) hi = mid;
      else lo = mid;
    }
    const banned = await client.completions.create({ ...request, logit_bias: { [String(lo)]: -100 } });
    const tokens = banned.choices[0].logprobs.tokens;
    assert.ok(!tokens.includes(first), `${JSON.stringify(first)} (id ${lo}) is banned: ${JSON.stringify(tokens)}`);
    assert.notDeepEqual(tokens, plain.choices[0].logprobs.tokens);
  });

  test("a stop string spanning two tokens cuts the streamed text before it", async () => {
    const request = { model: "tiny", messages: PROMPT, max_tokens: 24, temperature: 0, logprobs: true };
    const plain = await client.chat.completions.create(request);
    const pieces = plain.choices[0].logprobs.content.map((t) => t.token);
    const k = pieces.findIndex((p, i) => i > 0 && p.length >= 3 && pieces[i + 1]?.length >= 3);
    assert.ok(k > 0, JSON.stringify(pieces));
    const stop = pieces[k].slice(-2) + pieces[k + 1].slice(0, 2);
    const full = plain.choices[0].message.content;
    const stream = await client.chat.completions.create({ ...request, logprobs: false, stop: [stop], stream: true });
    let text = "";
    let finish = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, full.slice(0, full.indexOf(stop)));
    assert.equal(finish, "stop");
  });
});

describe("aliases from a --config file", () => {
  let server;
  before(async () => {
    const config = join(tempDir("cai-e2e-config-"), "serve.yaml");
    writeFileSync(config, "served-model-name: [first, second]\ndefault-max-tokens: 5\n");
    server = await startServer(["--config", config]);
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  test("both names are listed; chat without max_tokens stops at the configured default", async () => {
    const client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    assert.deepEqual(models, ["first", "second"]);
    const r = await client.chat.completions.create({ model: "second", messages: PROMPT, ignore_eos: true });
    assert.equal(r.usage.completion_tokens, 5);
    assert.equal(r.choices[0].finish_reason, "length");
  });
});

// stories260K's vocabulary falls back to bytes, so it can write "</think>" when the budget forces it.
describe("reasoning budget (stories260K, a template that opens <think>)", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(["--chat-template", thinkTemplateFile(), "--served-model-name", "r1-like"],
                               { model: join(repoRoot, "tests", "data", "models", "stories260K.gguf"), ctxSize: 1024 });
    client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  const ask = (extra) => client.chat.completions.create({ model: "r1-like", messages: PROMPT, max_tokens: 40,
                                                          temperature: 0, ignore_eos: true, ...extra });

  test("max_reasoning_tokens: reasoning keeps that many tokens, then the answer follows", async () => {
    const free = await ask({ logprobs: true });
    assert.equal(free.choices[0].message.content, "", "without a budget this model never closes </think>");
    const tokens = free.choices[0].logprobs.content.map((t) => t.token);
    const cut = await ask({ max_reasoning_tokens: 6 });
    const msg = cut.choices[0].message;
    assert.equal(msg.reasoning_content, tokens.slice(0, 6).join("").trimStart() + "\n");
    assert.ok(msg.content.length > 0, JSON.stringify(msg));
  });

  test("reasoning_effort (streamed): reasoning_content, then content", async () => {
    const stream = await client.chat.completions.create({ model: "r1-like", messages: PROMPT, max_tokens: 600,
                                                          temperature: 0, ignore_eos: true, stream: true,
                                                          reasoning_effort: "low" });
    let reasoning = "";
    let content = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta ?? {};
      if (delta.content) assert.ok(reasoning.length > 0, "content before the reasoning");
      reasoning += delta.reasoning_content ?? "";
      content += delta.content ?? "";
    }
    assert.ok(reasoning.length > 0);
    assert.ok(content.length > 0, "low effort (512 tokens) must leave room for the answer in 600");
  });
});
