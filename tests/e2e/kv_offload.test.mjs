// E2E: the host KV tier. On a simt device of 5 MiB the KV cache of 16 full 512-token contexts (4 MiB) does not fit
// beside the weights and the workspace; with the nvidia-h200-sxm profile's host_offload_below, `cai serve` asks the
// planner, keeps the layers it names in host memory, and long prompts complete with exactly the tokens of a roomy
// device. The log names the `cai plan` command it followed, and that command's JSON agrees with /metrics.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import OpenAI from "openai";

import { caiBin, metric, startServer } from "./server_harness.mjs";

const MODEL = "TinyStories-656K-Q8_0";
const ENGINE = ["--device", "simt:0", "--max-batch", "16", "--max-tokens-per-step", "128"];
const TIGHT = { ctxSize: 512, env: { CAI_SIMT_MEMORY: "5MiB" } };

// Three prompts of about 150 tokens (10 blocks of 16 each with the reply), prefilled in chunks of 128 tokens: the
// emulated device computes about 50 tokens a second.
const PROMPTS = ["Lily", "Tom", "The little dog"].map(
  (who) => Array(12).fill(`${who} went to the park and played with a friend all day.`).join(" "));

async function replies(server) {
  const client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  return Promise.all(PROMPTS.map(async (prompt) => {
    const r = await client.completions.create({ model: MODEL, prompt, max_tokens: 10, temperature: 0 });
    assert.ok(r.usage.prompt_tokens > 128, `prompt of ${r.usage.prompt_tokens} tokens`);
    return r.choices[0].text;
  }));
}

describe("host KV tier on a small simt device", () => {
  let tight;
  let roomy;
  let allOnDevice;
  before(async () => {
    [tight, roomy, allOnDevice] = await Promise.all([
      startServer([...ENGINE, "--profile", "nvidia-h200-sxm"], TIGHT),
      startServer(ENGINE, { ctxSize: 512 }),
      startServer([...ENGINE, "--kv-offload-layers", "0"], TIGHT),
    ]);
  });
  after(async () => {
    for (const s of [tight, roomy, allOnDevice]) assert.equal(await s?.stop(), 0);
  });

  test("without the tier the device cannot hold 16 full contexts", async () => {
    assert.ok(await metric(allOnDevice, /^cai_kv_blocks_total (\d+)$/m) < 16 * 32);
    assert.equal(await metric(allOnDevice, /^cai_kv_offload_layers (\d+)$/m), 0);
  });

  test("with the profile's policy the planned layers go to host memory and the tokens stay the same", async () => {
    const log = tight.stderr();
    const planned = log.match(/KV offload: `cai plan ([^`]+)` puts (\d+) of 2 layers' KV in host memory/);
    assert.ok(planned, log);
    const layers = Number(planned[2]);
    assert.ok(layers > 0, log);
    assert.match(log, new RegExp(`engine: KV offload: layers ${2 - layers}\\.\\.1 \\(${layers} of 2\\) in host memory`));
    assert.equal(await metric(tight, /^cai_kv_blocks_total (\d+)$/m), 16 * 32);

    assert.deepEqual(await replies(tight), await replies(roomy));

    assert.equal(await metric(tight, /^cai_kv_offload_layers (\d+)$/m), layers);
    assert.ok(await metric(tight, /^cai_kv_offload_bytes_total\{direction="to_device"\} (\d+)$/m) > 0);
    assert.ok(await metric(tight, /^cai_kv_offload_bytes_total\{direction="to_host"\} (\d+)$/m) > 0);
    const { stdout } = await promisify(execFile)(caiBin, ["plan", ...planned[1].split(" "), "--json"]);
    assert.equal(JSON.parse(stdout).kv_offload_layers, layers);
  });
});
