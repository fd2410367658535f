// E2E: `cai serve` with the model over two simt devices (pipeline stages, CAI_SIMT_DEVICES=2) answers concurrent
// greedy requests with the same text as the one-device server: batch invariance holds across the stage boundary.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";

import { startServer } from "./server_harness.mjs";

const MODEL = "TinyStories-656K-Q8_0";
const PROMPTS = ["Tom had a red ball.", "Once upon a time", "The cat sat on the mat.", "Lily and Ben went to the park.",
                 "The sun was hot.", "A little bird"];

async function replies(server) {
  const client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  return Promise.all(PROMPTS.map(async (content) => {
    const r = await client.chat.completions.create({
      model: MODEL, messages: [{ role: "user", content }], max_tokens: 24, temperature: 0,
    });
    return r.choices[0].message.content;
  }));
}

describe("cai serve over two simt devices", () => {
  let two;
  let one;
  before(async () => {
    const env = { CAI_SIMT_DEVICES: "2" };
    [two, one] = await Promise.all([
      startServer(["--device", "simt:0,simt:1", "--max-batch", "4"], { env }),
      startServer(["--device", "simt:0", "--max-batch", "1"], { env }),
    ]);
  });
  after(async () => {
    assert.equal(await two?.stop(), 0);
    assert.equal(await one?.stop(), 0);
  });

  test("concurrent greedy replies equal one device's, one at a time", async () => {
    const [batched, alone] = await Promise.all([replies(two), replies(one)]);
    for (const text of batched) assert.ok(text.length > 0, "empty reply");
    assert.deepEqual(batched, alone);
    assert.match(two.stderr(), /layout: layers 0\.\.\d+ on simt:0; layers \d+\.\.\d+ on simt:1/);
  });

  test("/metrics counts the bytes moved between the devices", async () => {
    const text = await (await fetch(`${two.origin}/metrics`)).text();
    const m = text.match(/^cai_device_transfer_bytes_total (\d+)/m);
    assert.ok(m, "no cai_device_transfer_bytes_total in /metrics");
    assert.ok(Number(m[1]) > 0);
  });
});
