// E2E: the host KV tier across MPI ranks (docs/multi-node.md). Two ranks, one simt device each, as two pipeline
// stages with each stage's layer in host memory: each rank keeps its own tier, and concurrent greedy replies equal a
// one-device server's.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";

import { metric, mpirun, startServer } from "./server_harness.mjs";

const MODEL = "TinyStories-656K-Q8_0";
const PROMPTS = ["Tom had a red ball.", "Once upon a time", "The sun was hot.", "A little bird"];

async function replies(server) {
  const client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  return Promise.all(PROMPTS.map(async (prompt) => {
    const r = await client.completions.create({ model: MODEL, prompt, max_tokens: 20, temperature: 0 });
    return r.choices[0].text;
  }));
}

describe("host KV layers over two MPI ranks", { timeout: 120_000 }, () => {
  const env = { CAI_SIMT_DEVICES: "2" };
  let ranks;
  let one;
  before(async () => {
    [ranks, one] = await Promise.all([
      startServer(["--device", "simt", "--pp", "2", "--max-batch", "4", "--kv-offload-layers", "2"],
                  { env, launcher: mpirun(2) }),
      startServer(["--device", "simt:0", "--max-batch", "1"], { env }),
    ]);
  });
  after(async () => {
    for (const server of [ranks, one]) assert.equal(await server?.stop(), 0);
  });

  test("each rank stages its own layer, and the replies equal one device's", async () => {
    const [spread, alone] = await Promise.all([replies(ranks), replies(one)]);
    for (const text of alone) assert.ok(text.length > 0, "empty reply");
    assert.deepEqual(spread, alone);
    for (const rank of [0, 1]) {  // each rank's tier stages on its own device, the job's simt:0 and simt:1
      const line = `\\[rank ${rank}\\] .*KV offload: layers 0\\.\\.1 \\(2 of 2\\) in host memory .*on simt:${rank} `;
      assert.match(ranks.stderr(), new RegExp(line));
    }
    assert.equal(await metric(ranks, /^cai_kv_offload_layers (\d+)$/m), 2);
    assert.ok(await metric(ranks, /^cai_kv_offload_bytes_total\{direction="to_device"\} (\d+)$/m) > 0);
  });
});
