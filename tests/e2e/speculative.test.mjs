// E2E: `cai serve --spec ngram` and `--spec draft`: the official OpenAI client gets the text of a server without
// speculation, streamed or whole, the drafts in usage.completion_tokens_details, and /metrics counts them; a request
// may turn speculation off or ask for prompt lookup on a server that runs none.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";

import { metric, repoRoot, startServer } from "./server_harness.mjs";

const MODEL = "TinyStories-656K-Q8_0";
const PROMPT = Array(3).fill("Lily went to the park. She saw a big red ball and played with it all day.").join(" ");
const F16 = join(repoRoot, "tests", "data", "models", "TinyStories-656K.f16.gguf");

function client(server) {
  return new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
}

async function complete(server, extra = {}) {
  const body = { model: MODEL, prompt: PROMPT, max_tokens: 48, temperature: 0, ignore_eos: true };
  return client(server).completions.create({ ...body, ...extra });
}

describe("speculative decoding over HTTP", () => {
  let plain;
  let ngram;
  let draft;
  before(async () => {
    [plain, ngram, draft] = await Promise.all([
      startServer([]),
      startServer(["--spec", "ngram", "--spec-tokens", "4"]),
      startServer(["--spec", "draft", "--draft-model", F16, "--spec-tokens", "3"]),
    ]);
  });
  after(async () => {
    for (const s of [plain, ngram, draft]) assert.equal(await s?.stop(), 0);
  });

  test("the same greedy text, whole and streamed, with the drafts in usage", async () => {
    const want = (await complete(plain)).choices[0].text;
    for (const server of [ngram, draft]) {
      const got = await complete(server);
      assert.equal(got.choices[0].text, want);
      const d = got.usage.completion_tokens_details;
      assert.ok(d.accepted_prediction_tokens > 0, JSON.stringify(got.usage));
      assert.ok(d.rejected_prediction_tokens >= 0);
      let streamed = "";
      const stream = await client(server).completions.create({
        model: MODEL, prompt: PROMPT, max_tokens: 48, temperature: 0, ignore_eos: true, stream: true,
      });
      for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? "";
      assert.equal(streamed, want);
    }
    assert.ok(await metric(ngram, /^cai_spec_accepted_tokens_total (\d+)$/m) > 0);
    assert.ok(await metric(draft, /^cai_spec_acceptance_ratio ([0-9.e+-]+)$/m) > 0.5);
  });

  test("per request: off on a speculating server, prompt lookup on a plain one", async () => {
    const off = await complete(ngram, { speculative_method: "off" });
    assert.equal(off.usage.completion_tokens_details, undefined);
    const lookup = await complete(plain, { speculative_method: "ngram", num_speculative_tokens: 2 });
    assert.equal(lookup.choices[0].text, off.choices[0].text);
    assert.ok(lookup.usage.completion_tokens_details.accepted_prediction_tokens > 0);
    await assert.rejects(complete(plain, { speculative_method: "mtp" }), /not loaded on this server/);
  });
});
