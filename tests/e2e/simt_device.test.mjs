// E2E: `cai serve --device simt:0` (the CUDA-dialect kernels on the SIMT emulator) streams the same greedy chat
// reply as the CPU server: device uploads, the step metadata buffer and the one logits download per step, end to end.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";

import { startServer } from "./server_harness.mjs";

const MODEL = "TinyStories-656K-Q8_0";

async function streamedReply(client) {
  const stream = await client.chat.completions.create({
    model: MODEL, messages: [{ role: "user", content: "Tom had a red ball." }], max_tokens: 20, temperature: 0,
    stream: true,
  });
  let text = "";
  let chunks = 0;
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta?.content;
    if (delta) { text += delta; chunks += 1; }
  }
  return { text, chunks };
}

describe("cai serve on the simt device", () => {
  let simt;
  let cpu;
  before(async () => {
    [simt, cpu] = await Promise.all([startServer(["--device", "simt:0"]), startServer()]);
  });
  after(async () => {
    assert.equal(await simt?.stop(), 0);
    assert.equal(await cpu?.stop(), 0);
  });

  test("streaming chat on simt:0 equals the CPU's greedy reply", async () => {
    const onSimt = await streamedReply(new OpenAI({ baseURL: simt.baseURL, apiKey: "unused", maxRetries: 0 }));
    const onCpu = await streamedReply(new OpenAI({ baseURL: cpu.baseURL, apiKey: "unused", maxRetries: 0 }));
    assert.ok(onSimt.chunks >= 2, `expected a streamed reply, got ${onSimt.chunks} chunk(s)`);
    assert.equal(onSimt.text, onCpu.text);
    assert.match(simt.stderr(), /simt:0/);
  });
});
