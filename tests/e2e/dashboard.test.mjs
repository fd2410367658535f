// E2E: the operator's dashboard (/dashboard) in headless Chromium (playwright-core) while 16 clients stream
// completions, on the CPU and on a simt device: the page shows nonzero tokens/s, time-to-first-token percentiles, KV
// blocks in use and each device's memory, and loads nothing from outside the server. A screenshot of each is kept in
// $CAI_SCREENSHOT_DIR (CI keeps it as an artifact).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";

import { startServer, tempDir } from "./server_harness.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--no-first-run"];
const SCREENSHOT_DIR = process.env.CAI_SCREENSHOT_DIR ?? "/tmp";
const CLIENTS = 16;

const missing = !existsSync(CHROMIUM) && `${CHROMIUM} not found (apt-get install chromium)`;
if (missing && process.env.CI) throw new Error(`dashboard test cannot run in CI: ${missing}`);

// 16 clients, each streaming one long completion after another until stop() disconnects them.
function load(server) {
  const abort = new AbortController();
  const client = async () => {
    while (!abort.signal.aborted) {
      try {
        const res = await fetch(`${server.baseURL}/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt: "Once upon a time", max_tokens: 200, ignore_eos: true, stream: true }),
          signal: abort.signal,
        });
        assert.equal(res.status, 200);
        await res.text();
      } catch (err) {
        if (err.name !== "AbortError") throw err;
      }
    }
  };
  const clients = Array.from({ length: CLIENTS }, client);
  return { stop: async () => { abort.abort(); await Promise.all(clients); } };
}

describe("dashboard under load", { skip: missing, timeout: 180_000 }, () => {
  let context;
  before(async () => {
    context = await chromium.launchPersistentContext(tempDir("cai-chromium-"), {
      executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 800 },
    });
  });
  after(async () => { await context?.close(); });

  for (const device of ["cpu", "simt:0"]) {
    test(`on ${device}: live tokens/s, TTFT percentiles, KV use and device memory`, async () => {
      const server = await startServer(["--device", device, "--max-batch", String(CLIENTS)], { ctxSize: 512 });
      const traffic = load(server);
      try {
        const page = await context.newPage();
        const fromOutside = [];
        page.on("request", (req) => { if (!req.url().startsWith(server.origin)) fromOutside.push(req.url()); });
        await page.goto(`${server.origin}/dashboard`);
        // Every figure at once, while the load runs (most clients in the running batch, five seconds of charts): the
        // page polls /v1/status each second.
        await page.waitForFunction((clients) => {
          const value = (id) => Number(document.getElementById(id)?.dataset.value ?? 0);
          const rows = [...document.querySelectorAll("tr.device")];
          const points = document.querySelector("#chart-tok polyline")?.getAttribute("points") ?? "";
          return document.getElementById("live").textContent === "live" && value("tok-s") > 0 &&
            value("ttft-p50") > 0 && value("ttft-p99") >= value("ttft-p50") && value("kv-used") > 0 &&
            value("running") >= clients / 2 && points.split(" ").length >= 5 && rows.length > 0 &&
            rows.every((r) => Number(r.querySelector(".mem").dataset.used) > 0 &&
                              Number(r.querySelector(".mem").dataset.total) > 0);
        }, CLIENTS, { timeout: 60_000, polling: 250 });
        await page.screenshot({ path: join(SCREENSHOT_DIR, `cai-dashboard-${device.replace(":", "")}.png`),
                                fullPage: true });
        const names = await page.$$eval("tr.device", (rows) => rows.map((r) => r.dataset.name));
        assert.deepEqual(names, [device === "cpu" ? "cpu:0" : device]);
        assert.match(await page.textContent("#kv-total"), /^of \d+ \((f32|bf16)\)$/);
        assert.match(await page.textContent("#ttft-p90"), /^p90 \d+\.\d{3}$/);
        const points = await page.getAttribute("#chart-tok polyline", "points");
        assert.ok(points && points.split(" ").length >= 2, `no chart points: ${points}`);
        assert.deepEqual(fromOutside, [], "the page must not load external resources");
      } finally {
        await traffic.stop();
        assert.equal(await server.stop(), 0);
      }
    });
  }
});
