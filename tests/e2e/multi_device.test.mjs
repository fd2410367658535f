// E2E: `cai serve` with the model over two simt devices (CAI_SIMT_DEVICES=2), as two pipeline stages and as two
// tensor-parallel ranks, with and without KV layers in host memory, answers concurrent greedy requests with the same
// text as the one-device server answers them one at a time: batch invariance holds across stage boundaries,
// all-reduces and each device's host KV tier.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";

import { metric, startServer } from "./server_harness.mjs";

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
  let pp;
  let ppHost;
  let tp;
  let one;
  before(async () => {
    const env = { CAI_SIMT_DEVICES: "2" };
    [pp, ppHost, tp, one] = await Promise.all([
      // A profile whose policy offloads KV to host memory on one card: over several devices the engine keeps every
      // layer's KV on its own device instead.
      startServer(["--device", "simt:0,simt:1", "--pp", "2", "--max-batch", "4", "--profile", "nvidia-h200-sxm"],
                  { env }),
      // Each stage's one layer in host memory, staged on its own device.
      startServer(["--device", "simt:0,simt:1", "--pp", "2", "--max-batch", "4", "--kv-offload-layers", "2"], { env }),
      // The last layer's KV heads in host memory on both ranks: a tier per device, each with its half of the heads.
      startServer(["--device", "simt:0,simt:1", "--tp", "2", "--max-batch", "4", "--kv-offload-layers", "1"], { env }),
      startServer(["--device", "simt:0", "--max-batch", "1"], { env }),
    ]);
  });
  after(async () => {
    for (const server of [pp, ppHost, tp, one]) assert.equal(await server?.stop(), 0);
  });

  test("concurrent greedy replies equal one device's, one at a time", async () => {
    const [staged, stagedHost, ranked, alone] =
      await Promise.all([replies(pp), replies(ppHost), replies(tp), replies(one)]);
    for (const text of alone) assert.ok(text.length > 0, "empty reply");
    assert.deepEqual(staged, alone);
    assert.deepEqual(stagedHost, alone);
    assert.deepEqual(ranked, alone);
    assert.match(pp.stderr(), /layout: layers 0\.\.0 on simt:0; layers 1\.\.1 on simt:1/);
    assert.match(pp.stderr(), /KV offload: none: the profile's plan is for one card and the layers run on 2 devices/);
    assert.match(ppHost.stderr(),
                 /KV offload: layers 0\.\.1 \(2 of 2\) in host memory \([\d.]+ MiB\), streamed to a staging layer on simt:0, simt:1/);
    assert.match(tp.stderr(),
                 /KV offload: layers 1\.\.1 \(1 of 2\) in host memory \([\d.]+ MiB\), streamed to a staging layer on simt:0, simt:1/);
    assert.match(tp.stderr(), /layout: layers 0\.\.1 on simt:0,simt:1 \(tensor parallel, 2 ranks a stage\)/);
    assert.match(tp.stderr(), /collectives over simt:0,simt:1: simt collectives/);
  });

  test("/metrics counts the host layers and the bytes each tier moved", async () => {
    for (const [server, layers] of [[ppHost, 2], [tp, 1]]) {
      assert.equal(await metric(server, /^cai_kv_offload_layers (\d+)$/m), layers);
      assert.ok(await metric(server, /^cai_kv_offload_bytes_total\{direction="to_device"\} (\d+)$/m) > 0);
      assert.ok(await metric(server, /^cai_kv_offload_bytes_total\{direction="to_host"\} (\d+)$/m) > 0);
    }
  });

  test("/metrics counts the bytes moved between the devices", async () => {
    for (const server of [pp, ppHost, tp]) {
      const text = await (await fetch(`${server.origin}/metrics`)).text();
      const m = text.match(/^cai_device_transfer_bytes_total (\d+)/m);
      assert.ok(m, "no cai_device_transfer_bytes_total in /metrics");
      assert.ok(Number(m[1]) > 0);
    }
  });
});
