// Load bench: N concurrent streaming clients against `cai serve` over loopback; prints tokens/s, TTFT and
// inter-token latency percentiles as JSON.
//   node bench/load_bench.mjs [--url http://127.0.0.1:8000 | --serve [--model PATH]] [--clients 8]
//        [--requests 4] [--max-tokens 64] [--duration-s 60] [--prompt TEXT] [--api-key KEY]
// Without --url it starts `cai serve` itself ($CAI_BIN or build/cai) with the built-in TinyStories model.
import { parseArgs } from "node:util";

import { startServer } from "../tests/e2e/server_harness.mjs";

const { values: opt } = parseArgs({
  options: {
    url: { type: "string" },
    model: { type: "string" },
    clients: { type: "string", default: "8" },
    requests: { type: "string", default: "4" },
    "max-tokens": { type: "string", default: "64" },
    "duration-s": { type: "string", default: "60" },
    prompt: { type: "string", default: "Once upon a time, there was a little" },
    "api-key": { type: "string", default: process.env.CAI_API_KEY ?? "" },
  },
});

const bounded = (name, value, lo, hi) => {
  const n = Number.parseInt(value, 10);
  if (!(n >= lo && n <= hi)) throw new Error(`--${name} must be an integer in [${lo}, ${hi}]`);
  return n;
};
const nClients = bounded("clients", opt.clients, 1, 256);
const nRequests = bounded("requests", opt.requests, 1, 1000);
const maxTokens = bounded("max-tokens", opt["max-tokens"], 1, 4096);
const durationMs = bounded("duration-s", opt["duration-s"], 1, 3600) * 1000;

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Number(sorted[i].toFixed(3));
}
function summary(values) {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : null;
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), mean: mean === null ? null : Number(mean.toFixed(3)) };
}

// One streaming completion; returns { ttftMs, itlMs[], tokens } or throws with the HTTP status.
async function oneRequest(baseURL, model, signal) {
  const headers = { "content-type": "application/json" };
  if (opt["api-key"]) headers.authorization = `Bearer ${opt["api-key"]}`;
  const body = { model, prompt: opt.prompt, max_tokens: maxTokens, temperature: 0.8, ignore_eos: true, stream: true,
                 stream_options: { include_usage: true } };
  const t0 = performance.now();
  const res = await fetch(`${baseURL}/completions`, { method: "POST", headers, body: JSON.stringify(body), signal });
  if (!res.ok) throw Object.assign(new Error(`HTTP ${res.status}`), { status: res.status });
  const decoder = new TextDecoder();
  let buffer = "", last = null, ttftMs = null, tokens = 0;
  const itlMs = [];
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
      const chunk = JSON.parse(event.slice(6));
      if (chunk.error) throw Object.assign(new Error(chunk.error.message), { status: "stream-error" });
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
      if (!chunk.choices?.[0]?.text) continue;
      const now = performance.now();
      if (ttftMs === null) ttftMs = now - t0;
      else itlMs.push(now - last);
      last = now;
    }
  }
  return { ttftMs, itlMs, tokens };
}

async function main() {
  const server = opt.url ? null : await startServer([], opt.model ? { model: opt.model } : {});
  const origin = opt.url ?? server.origin;
  const baseURL = `${origin.replace(/\/$/, "")}/v1`;
  try {
    const models = await (await fetch(`${baseURL}/models`, {
      headers: opt["api-key"] ? { authorization: `Bearer ${opt["api-key"]}` } : {},
    })).json();
    const model = models.data[0].id;
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), durationMs);
    const ttft = [], itl = [], errors = {};
    let tokens = 0, ok = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: nClients }, async () => {
      for (let i = 0; i < nRequests && !stop.signal.aborted; ++i) {
        try {
          const r = await oneRequest(baseURL, model, stop.signal);
          ok += 1;
          tokens += r.tokens;
          if (r.ttftMs !== null) ttft.push(r.ttftMs);
          itl.push(...r.itlMs);
        } catch (err) {
          if (stop.signal.aborted) break;
          const key = String(err.status ?? err.name);
          errors[key] = (errors[key] ?? 0) + 1;
        }
      }
    }));
    clearTimeout(timer);
    const wallS = (performance.now() - t0) / 1000;
    console.log(JSON.stringify({
      url: origin, model, clients: nClients, requests_per_client: nRequests, max_tokens: maxTokens,
      requests_ok: ok, errors, stopped_by_time_limit: stop.signal.aborted, wall_s: Number(wallS.toFixed(3)),
      generated_tokens: tokens, tokens_per_s: Number((tokens / wallS).toFixed(2)),
      ttft_ms: summary(ttft), inter_token_ms: summary(itl),
    }, null, 2));
  } finally {
    await server?.stop();
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
