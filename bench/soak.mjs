// Soak test for `cai serve`: many clients for a bounded time over a mix of good requests, client disconnects and bad
// inputs; checks the status of every request, /health latency, the server's RSS, that every KV block is free once the
// load stops, and that the server still answers a greedy chat as it did at the start. Exit code 0 only when all pass.
//   node bench/soak.mjs [--seconds 60] [--clients 64] [--max-tokens 8] [--cai PATH] [--model PATH] [-- SERVE ARGS...]
//   node bench/soak.mjs --url http://127.0.0.1:8000 [--pid PID] ...   (attach; the RSS check needs --pid)
//   --skip KIND,... leaves request kinds (the table's first column) out of the mix.
// Prints a table, then one line of JSON. Without --url it starts `cai serve` itself (--cai, $CAI_BIN or build/cai) on
// a free port with the built-in default model and `--max-body` (default 1 MiB, to keep the oversized uploads cheap);
// arguments after `--` go to `cai serve`. Attached to a server, --max-body must say the limit it runs with.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const { values: opt, positionals: serveArgs } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: "string", default: "60" },
    clients: { type: "string", default: "64" },
    "max-tokens": { type: "string", default: "8" },
    cai: { type: "string", default: process.env.CAI_BIN ?? join(repoRoot, "build", "cai") },
    model: { type: "string", default: join(repoRoot, "data", "models", "TinyStories-656K-Q8_0.gguf") },
    url: { type: "string" },
    pid: { type: "string" },
    "api-key": { type: "string", default: process.env.CAI_API_KEY ?? "" },
    "max-body": { type: "string", default: String(1 << 20) },  // the server's --max-body (passed to one started here)
    "warmup-seconds": { type: "string" },
    "health-max-ms": { type: "string", default: "5000" },
    "rss-growth-pct": { type: "string", default: "25" },
    "rss-growth-mib": { type: "string", default: "200" },
    "drain-seconds": { type: "string", default: "30" },
    "request-timeout-s": { type: "string", default: "120" },
    skip: { type: "string", default: "" },  // request kinds left out of the mix, comma-separated
  },
});

const bounded = (name, lo, hi) => {
  const n = Number(opt[name]);
  if (!(Number.isInteger(n) && n >= lo && n <= hi)) throw new Error(`--${name} must be an integer in [${lo}, ${hi}]`);
  return n;
};
const cfg = {
  seconds: bounded("seconds", 1, 30 * 86400),
  clients: bounded("clients", 1, 1024),
  maxTokens: bounded("max-tokens", 1, 256),
  maxBody: bounded("max-body", 1024, 2 ** 40),
  healthMaxMs: bounded("health-max-ms", 1, 600_000),
  rssGrowthPct: bounded("rss-growth-pct", 0, 1000),
  rssGrowthMiB: bounded("rss-growth-mib", 0, 1 << 20),
  drainMs: bounded("drain-seconds", 1, 3600) * 1000,
  requestTimeoutMs: bounded("request-timeout-s", 1, 3600) * 1000,
  pid: opt.pid === undefined ? null : bounded("pid", 1, 2 ** 31),
};
cfg.warmupMs = 1000 * (opt["warmup-seconds"] === undefined ? Math.min(10, Math.ceil(cfg.seconds / 6))
                                                            : bounded("warmup-seconds", 0, cfg.seconds));

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
const pick = (items) => items[Math.floor(Math.random() * items.length)];
const MiB = 1 << 20;

// Latencies in log-spaced buckets 2 % wide: percentiles within 2 % in constant memory, however long the run.
class Latency {
  constructor() { this.buckets = new Map(); this.n = 0; this.max = 0; }
  add(ms) {
    const i = Math.max(0, Math.ceil(Math.log(Math.max(ms, 0.01) / 0.01) / Math.log(1.02)));
    this.buckets.set(i, (this.buckets.get(i) ?? 0) + 1);
    this.n += 1;
    this.max = Math.max(this.max, ms);
  }
  percentile(p) {
    if (this.n === 0) return null;
    const rank = Math.max(1, Math.ceil((p / 100) * this.n));
    let seen = 0;
    for (const i of [...this.buckets.keys()].sort((a, b) => a - b)) {
      seen += this.buckets.get(i);
      if (seen >= rank) return Math.min(this.max, 0.01 * 1.02 ** i);
    }
    return this.max;
  }
  summary() {
    const r = (v) => (v === null ? null : Number(v.toFixed(1)));
    return { n: this.n, p50_ms: r(this.percentile(50)), p99_ms: r(this.percentile(99)), max_ms: r(this.max) };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP: well-formed requests through node:http, malformed ones written byte for byte on a raw socket.

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: Infinity });
let origin, modelId;

function authHeaders() {
  return opt["api-key"] ? { authorization: `Bearer ${opt["api-key"]}` } : {};
}

// One request; an object body is sent as JSON, a string as it is. `onResponse(res, req)` may consume the response
// itself (streams, disconnects); by default its body is read as text. Resolves { status, body, reused } or
// { error, reused }; never rejects.
function request(method, path, { body, agent = keepAlive, onResponse, timeoutMs = cfg.requestTimeoutMs } = {}) {
  return new Promise((done) => {
    const headers = { ...authHeaders() };
    if (body !== undefined) headers["content-type"] = "application/json";
    const req = http.request(`${origin}${path}`, { method, headers, agent });
    let settled = false;
    const finish = (result) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      done({ ...result, reused: req.reusedSocket });
    };
    const timer = setTimeout(() => { finish({ error: "timeout" }); req.destroy(); }, timeoutMs);
    req.on("error", (err) => finish({ error: err.code ?? err.message }));
    req.on("response", (res) => {
      if (onResponse) return onResponse(res, req).then(finish, (err) => finish({ error: err.message }));
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (s) => { text += s; });
      res.on("end", () => finish({ status: res.statusCode, body: text }));
      res.on("error", (err) => finish({ error: err.code ?? err.message }));
    });
    req.end(body === undefined || typeof body === "string" ? body : JSON.stringify(body));
  });
}

// Writes `parts` on a fresh connection, `delayMs` apart (then half-closes when `halfClose`), and reads the first
// response. Resolves { status, body } once it is complete (or the server closed: `bad` when before its Content-Length),
// or { error: "closed" | "reset" | "timeout" | "truncated" } when no whole head came.
function rawExchange(parts, { delayMs = 0, halfClose = false, timeoutMs = cfg.requestTimeoutMs } = {}) {
  const { hostname, port } = new URL(origin);
  return new Promise((done) => {
    const sock = net.connect(Number(port), hostname);
    let data = Buffer.alloc(0), settled = false;
    const finish = (result) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      done(result);
    };
    // The response so far: null until its head is in; `complete` once its Content-Length bytes are in too.
    const response = () => {
      const head = data.indexOf("\r\n\r\n");
      if (head < 0) return null;
      const text = data.subarray(0, head).toString("latin1");
      const length = /\r\ncontent-length: *(\d+)/i.exec(text);
      const body = data.subarray(head + 4, length ? head + 4 + Number(length[1]) : undefined);
      return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1]), body: body.toString("utf8"),
               complete: length !== null && body.length === Number(length[1]), hasLength: length !== null };
    };
    const timer = setTimeout(() => finish({ error: "timeout" }), timeoutMs);
    sock.on("data", (chunk) => {
      data = Buffer.concat([data, chunk]);
      const r = response();
      if (r?.complete) finish(r);
    });
    const ended = (error) => {
      const r = response();
      if (r && r.hasLength && !r.complete) r.bad = "response cut short of its Content-Length";
      finish(r ?? { error: data.length ? "truncated" : error });
    };
    sock.on("end", () => ended("closed"));
    sock.on("close", () => ended("closed"));
    sock.on("error", (err) => ended(err.code === "ECONNRESET" || err.code === "EPIPE" ? "reset" : err.code));
    sock.on("connect", async () => {
      for (let i = 0; i < parts.length && !settled; ++i) {
        if (i > 0 && delayMs) await sleep(delayMs);
        if (!sock.destroyed) sock.write(parts[i]);
      }
      if (halfClose && !sock.destroyed) sock.end();
    });
  });
}

// A request head that asks the server to close after its answer.
function rawHead(method, path, headers) {
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${new URL(origin).host}`, "Connection: close"];
  for (const [k, v] of Object.entries({ ...authHeaders(), ...headers })) lines.push(`${k}: ${v}`);
  return lines.join("\r\n") + "\r\n\r\n";
}

// A POST /v1/chat/completions of JSON with these extra headers, its head and `body` in one write.
function rawChat(headers, body = "", options = {}) {
  const head = rawHead("POST", "/v1/chat/completions", { "Content-Type": "application/json", ...headers });
  return rawExchange([head + body], options);
}

// ---------------------------------------------------------------------------------------------------------------
// The request mix. Each kind lists the statuses it may end with (429 wherever the engine queue may refuse) and
// returns { status } or { error }, plus `bad` when a 200's body is not a well-formed answer.

const PROMPTS = ["Once upon a time", "Lily and Tom went to the park", "The little dog was sad because",
                 "One day, a big red ball", "Sam found a shiny stone and"];
const chatBody = (extra = {}) => ({
  model: modelId, messages: [{ role: "user", content: `${pick(PROMPTS)} ${Math.floor(Math.random() * 1000)}` }],
  max_tokens: 1 + Math.floor(Math.random() * cfg.maxTokens), temperature: Math.random(), ...extra,
});
const completionBody = (extra = {}) => ({
  model: modelId, prompt: pick(PROMPTS), max_tokens: 1 + Math.floor(Math.random() * cfg.maxTokens),
  temperature: Math.random(), ...extra,
});

function parseJson(text) {
  try { return JSON.parse(text); } catch { return undefined; }
}

// The problem with a non-streamed answer, or null.
function checkAnswer(json, body, chat) {
  const c = json?.choices?.[0];
  const text = chat ? c?.message?.content : c?.text;
  if (typeof text !== "string") return "no text in choices[0]";
  if (!["stop", "length"].includes(c.finish_reason)) return `finish_reason ${c.finish_reason}`;
  const n = json.usage?.completion_tokens;
  if (!(n >= 0 && n <= body.max_tokens)) return `completion_tokens ${n} for max_tokens ${body.max_tokens}`;
  return null;
}

// Reads server-sent events; `disconnectAfter` data events, it hangs up instead of reading on.
function readEvents(res, req, { body, disconnectAfter = Infinity }) {
  return new Promise((ok) => {
    if (res.statusCode !== 200) {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (s) => { text += s; });
      return res.on("end", () => ok({ status: res.statusCode, body: text }));
    }
    let buffer = "", events = 0, done = false, finishReason = null, usage = null, bad = null;
    res.setEncoding("utf8");
    res.on("data", (text) => {
      buffer += text;
      for (let cut; (cut = buffer.indexOf("\n\n")) >= 0;) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (event.startsWith(":")) continue;  // keep-alive comment
        if (event === "data: [DONE]") { done = true; continue; }
        const chunk = event.startsWith("data: ") ? parseJson(event.slice(6)) : undefined;
        if (!chunk || chunk.error) bad ??= `bad event: ${event.slice(0, 200)}`;
        finishReason ??= chunk?.choices?.[0]?.finish_reason ?? null;
        usage = chunk?.usage ?? usage;
        if (++events >= disconnectAfter) {
          req.destroy();
          return ok({ status: 200, disconnected: true });
        }
      }
    });
    res.on("end", () => {
      if (!done) bad ??= "stream ended without [DONE]";
      if (!["stop", "length"].includes(finishReason)) bad ??= `finish_reason ${finishReason}`;
      const n = usage?.completion_tokens;
      if (!(n >= 0 && n <= body.max_tokens)) bad ??= `usage.completion_tokens ${n} for max_tokens ${body.max_tokens}`;
      ok({ status: 200, bad });
    });
    res.on("error", (err) => ok({ error: err.code ?? err.message }));
  });
}

async function generate(chat, stream, disconnect = {}) {
  const extra = stream ? { stream: true, stream_options: { include_usage: true } } : {};
  const body = chat ? chatBody({ ...extra, ...disconnect.extra }) : completionBody({ ...extra, ...disconnect.extra });
  const path = chat ? "/v1/chat/completions" : "/v1/completions";
  if (stream) {
    const onResponse = (res, req) => readEvents(res, req, { body, disconnectAfter: disconnect.after });
    return request("POST", path, { body, onResponse, agent: disconnect.after ? false : keepAlive });
  }
  if (disconnect.afterMs !== undefined) {
    // Hangs up before (most likely) the answer is complete.
    return request("POST", path, { body, agent: false, timeoutMs: disconnect.afterMs })
      .then((r) => (r.error === "timeout" ? { disconnected: true } : r));
  }
  const r = await request("POST", path, { body });
  if (r.status === 200) r.bad = checkAnswer(parseJson(r.body), body, chat);
  return r;
}

const GEN = [200, 429];
const longGen = { max_tokens: 200, ignore_eos: true };  // long enough to be cut short
const chatPrefix = JSON.stringify({ messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 4 });
const KINDS = {
  chat_stream: { weight: 20, expect: GEN, run: () => generate(true, true) },
  chat: { weight: 14, expect: GEN, run: () => generate(true, false) },
  completion: { weight: 8, expect: GEN, run: () => generate(false, false) },
  completion_stream: { weight: 6, expect: GEN, run: () => generate(false, true) },
  disconnect_stream: { weight: 6, expect: GEN,
    run: () => generate(true, true, { after: 1 + Math.floor(Math.random() * 3), extra: longGen }) },
  disconnect_nonstream: { weight: 5, expect: GEN,
    run: () => generate(Math.random() < 0.5, false, { afterMs: 5 + Math.random() * 300, extra: longGen }) },
  bad_json: { weight: 4, expect: [400],
    run: () => request("POST", pick(["/v1/chat/completions", "/v1/completions"]),
                       { body: pick(['{"messages": [{', "not json", "", "[1, 2", '{"prompt": "a",}', "\u0000"]) }) },
  unknown_param: { weight: 4, expect: [400],
    run: () => request("POST", "/v1/chat/completions", { body: chatBody({ frobnicate: 1 }) }) },
  oversized_body: { weight: 2, expect: [413],  // refused from its Content-Length, before any body byte
    run: () => rawChat({ "Content-Length": cfg.maxBody + 1 }) },
  // 429 when other bodies already hold the server-wide body budget (16 × --max-body)
  oversized_chunked: { weight: 1, expect: [413, 429], run: oversizedChunked },
  bad_content_length: { weight: 3, expect: [400],
    run: () => rawChat({ "Content-Length": pick(["12x", "-1", "1 2"]) }, chatPrefix) },
  short_content_length: { weight: 2, expect: [400],  // the body cut at its Content-Length is not JSON
    run: () => rawChat({ "Content-Length": chatPrefix.length - 5 }, chatPrefix) },
  truncated_body: { weight: 2, expect: [400, "closed"],  // the client half-closes before its Content-Length is sent
    run: () => rawChat({ "Content-Length": chatPrefix.length + 10 }, chatPrefix, { halfClose: true }) },
  slow_headers: { weight: 2, expect: [200], run: slowHeaders },
  chunked_body: { weight: 3, expect: GEN, run: () => chunkedBody(true) },
  bad_chunked: { weight: 2, expect: [400], run: () => chunkedBody(false) },
  health: { weight: 4, expect: [200], run: () => request("GET", "/health") },
  metrics: { weight: 2, expect: [200], run: async () => {
    const r = await request("GET", "/metrics");
    if (r.status === 200 && !r.body.includes("cai_kv_blocks_total")) r.bad = "no cai_kv_blocks_total";
    return r;
  } },
};

// A GET /health whose head arrives a few bytes at a time over about three seconds.
function slowHeaders() {
  const head = rawHead("GET", "/health", { "User-Agent": "cai-soak-slow-drip" });
  const step = Math.ceil(head.length / 12);
  const parts = [];
  for (let i = 0; i < head.length; i += step) parts.push(head.slice(i, i + step));
  return rawExchange(parts, { delayMs: 250 });
}

// A chat request sent with Transfer-Encoding: chunked, in three chunks; or with a malformed chunk size line.
async function chunkedBody(valid) {
  const sent = chatBody();
  const body = JSON.stringify(sent);
  const third = Math.ceil(body.length / 3);
  const chunks = [body.slice(0, third), body.slice(third, 2 * third), body.slice(2 * third)];
  const encoded = chunks.map((c) => `${Buffer.byteLength(c).toString(16)}\r\n${c}\r\n`);
  if (!valid) encoded[1] = `zz\r\n${chunks[1]}\r\n`;
  const head = rawHead("POST", "/v1/chat/completions",
                       { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
  const r = await rawExchange([head + encoded[0], encoded[1], encoded[2] + "0\r\n\r\n"], { delayMs: 20 });
  if (r.status === 200) r.bad ??= checkAnswer(parseJson(r.body), sent, true);
  return r;
}

// A chunked body one byte past --max-body, in chunks of a quarter of it: the server reads up to the limit, answers 413
// and closes. The last chunk and the terminator go in one write, paced, so the server has read all that was sent when
// it closes. The parts are built once.
let oversizedParts;
function oversizedChunked() {
  if (!oversizedParts) {
    const piece = Math.ceil(cfg.maxBody / 4);
    const chunk = (n) => Buffer.from(`${n.toString(16)}\r\n${"a".repeat(n)}\r\n`);
    oversizedParts = [rawHead("POST", "/v1/chat/completions",
                              { "Content-Type": "application/json", "Transfer-Encoding": "chunked" })];
    let sent = 0;
    for (; sent + piece <= cfg.maxBody; sent += piece) oversizedParts.push(chunk(piece));
    oversizedParts.push(Buffer.concat([chunk(cfg.maxBody - sent + 1), Buffer.from("0\r\n\r\n")]));
  }
  return rawExchange(oversizedParts, { delayMs: 5 });
}

// ---------------------------------------------------------------------------------------------------------------
// Bookkeeping: per kind, the outcomes and latencies; failures keep their first examples.

const stats = Object.fromEntries(Object.keys(KINDS).map((k) => [k, { outcomes: {}, latency: new Latency(),
                                                                      failed: 0 }]));
const failures = { count: 0, examples: [] };
let n429 = 0, nKeepAliveRaces = 0;

function fail(what, detail) {
  failures.count += 1;
  if (failures.examples.length < 20) failures.examples.push({ at_s: Number(elapsedS().toFixed(1)), what, ...detail });
}

function record(kind, r, ms) {
  const s = stats[kind];
  // A reused keep-alive socket the server had just closed: the request never reached it (Node does not retry).
  if (r.error === "ECONNRESET" && r.reused && r.status === undefined) {
    nKeepAliveRaces += 1;
    return;
  }
  const outcome = r.disconnected ? "disconnected" : r.status ?? r.error;
  s.outcomes[outcome] = (s.outcomes[outcome] ?? 0) + 1;
  s.latency.add(ms);
  if (r.status === 429) n429 += 1;
  const expected = r.disconnected || KINDS[kind].expect.includes(outcome);
  let problem = expected ? null : `unexpected ${outcome}`;
  if (!problem && r.bad) problem = r.bad;
  if (!problem && r.status >= 400 && r.body !== undefined && typeof parseJson(r.body)?.error?.message !== "string")
    problem = "error body is not an OpenAI error object";
  if (!problem) return;
  s.failed += 1;
  fail(kind, { outcome, problem, body: r.body?.slice(0, 300) });
}

let t0 = performance.now();
let serverGone = false;  // the server process ended: the clients stop at once
const elapsedS = () => (performance.now() - t0) / 1000;

const skipped = opt.skip.split(",").filter(Boolean);
for (const k of skipped) if (!KINDS[k]) throw new Error(`--skip: no request kind '${k}'`);
const mix = Object.entries(KINDS).filter(([name]) => !skipped.includes(name));
if (mix.length === 0) throw new Error("--skip leaves no request kind");
const totalWeight = mix.reduce((a, [, k]) => a + k.weight, 0);

function pickKind() {
  let x = Math.random() * totalWeight;
  for (const [name, k] of mix) if ((x -= k.weight) < 0) return name;
  return mix[0][0];
}

async function client(deadline) {
  while (performance.now() < deadline && !serverGone) {
    const kind = pickKind();
    const start = performance.now();
    const r = await KINDS[kind].run();
    record(kind, r, performance.now() - start);
  }
}

// /health on a fresh connection every 200 ms, timed: the server must stay responsive under load.
async function healthProbe(stop, latency) {
  while (!stop.done) {
    const start = performance.now();
    const r = await request("GET", "/health", { agent: false, timeoutMs: cfg.healthMaxMs * 4 });
    latency.add(performance.now() - start);
    if (r.status !== 200) fail("health_probe", { outcome: r.status ?? r.error });
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The server: started here or attached to; its RSS; its metrics.

function rssBytes(pid) {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

async function startServer() {
  const args = ["serve", "-m", opt.model, "--host", "127.0.0.1", "--port", "0", "--max-body", String(cfg.maxBody),
                ...serveArgs];
  const proc = spawn(opt.cai, args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (text) => { log = (log + text).slice(-64 * 1024); });  // the tail, for the report
  const url = await new Promise((ok, reject) => {
    const timer = setInterval(() => {
      const m = /chat page: (http:\/\/[0-9.]+:\d+)\//.exec(log);
      if (m) { clearInterval(timer); ok(m[1]); }
    }, 20);
    proc.on("exit", (code) => { clearInterval(timer); reject(new Error(`cai serve exited with ${code}:\n${log}`)); });
    proc.on("error", (err) => { clearInterval(timer); reject(err); });
  });
  return { url, proc, log: () => log };
}

async function waitHealthy(timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await request("GET", "/health", { agent: false, timeoutMs: 5000 });
    if (r.status === 200) return;
    if (serverGone) throw new Error("cai serve exited before it was ready");
    if (Date.now() > deadline) throw new Error(`/health did not answer 200 (last: ${r.status ?? r.error})`);
    await sleep(100);
  }
}

// The Prometheus samples as { "name{labels}": value }.
async function metrics() {
  const r = await request("GET", "/metrics", { agent: false, timeoutMs: 10_000 });
  if (r.status !== 200) return null;
  const out = {};
  for (const line of r.body.split("\n")) {
    const m = /^([a-z_:]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

const server5xx = (m) => Object.entries(m ?? {})
  .filter(([k]) => /^cai_http_requests_total\{.*status="5\d\d"/.test(k)).reduce((a, [, v]) => a + v, 0);

// Waits until no request runs or waits and every KV block is free; returns the last metrics seen.
async function drained() {
  const deadline = Date.now() + cfg.drainMs;
  for (;;) {
    const m = await metrics();
    const idle = m && m.cai_num_requests_running === 0 && m.cai_num_requests_waiting === 0;
    if (idle && m.cai_kv_blocks_total > 0 && m.cai_kv_blocks_free === m.cai_kv_blocks_total) return { m, ok: true };
    if (Date.now() > deadline || serverGone) return { m, ok: false };
    await sleep(250);
  }
}

// A greedy chat: same text at the start and the end of the soak (greedy decoding is deterministic and batch-invariant).
async function greedyChat() {
  const body = { model: modelId, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 16,
                 temperature: 0 };
  const r = await request("POST", "/v1/chat/completions", { body, agent: false });
  const json = r.status === 200 ? parseJson(r.body) : undefined;
  const problem = r.status !== 200 ? `status ${r.status ?? r.error}` : checkAnswer(json, body, true);
  return { text: json?.choices?.[0]?.message?.content, problem };
}

// Sends SIGTERM and waits for the exit; the code (null when it had to be killed).
function stopServer(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((ok) => {
    const kill = setTimeout(() => { proc.kill("SIGKILL"); ok(null); }, 20_000);
    proc.on("exit", (code) => { clearTimeout(kill); ok(code); });
    proc.kill("SIGTERM");
  });
}

// ---------------------------------------------------------------------------------------------------------------

const mib = (b) => (b === null || b === undefined ? null : Number((b / MiB).toFixed(1)));

async function soak(pid) {
  await waitHealthy(120_000);
  modelId = parseJson((await request("GET", "/v1/models")).body)?.data?.[0]?.id;
  const before = await metrics();
  const baseline = await greedyChat();
  if (baseline.problem) fail("baseline_chat", { problem: baseline.problem });

  t0 = performance.now();
  const rss = { start: null, max: null, end: null };
  const sampler = setInterval(() => {
    const b = pid ? rssBytes(pid) : null;
    if (pid && b === null && !serverGone) {
      serverGone = true;
      fail("server_exit", { problem: `process ${pid} is gone` });
    }
    if (b === null || elapsedS() * 1000 < cfg.warmupMs) return;
    rss.start ??= b;
    rss.max = Math.max(rss.max ?? 0, b);
  }, 1000);
  const health = new Latency();
  const progress = setInterval(() => {
    const n = Object.values(stats).reduce((a, s) => a + s.latency.n, 0);
    console.error(`soak: ${elapsedS().toFixed(0)}s requests=${n} failures=${failures.count} 429=${n429} ` +
                  `rss=${pid ? mib(rssBytes(pid)) : "-"}MiB health_max=${health.max.toFixed(1)}ms`);
  }, 30_000);
  const probeStop = { done: false };
  const probe = healthProbe(probeStop, health);
  const deadline = t0 + cfg.seconds * 1000;
  await Promise.all(Array.from({ length: cfg.clients }, () => client(deadline)));
  probeStop.done = true;
  await probe;
  clearInterval(progress);
  const loadS = elapsedS();

  const drain = await drained();
  const final = await greedyChat();
  const after = await metrics();
  clearInterval(sampler);
  rss.end = pid ? rssBytes(pid) : null;
  rss.start ??= rss.end;
  rss.max = Math.max(rss.max ?? 0, rss.end ?? 0);
  return { before, after, baseline, final, drain, rss, health, loadS };
}

// The pass/fail checks of a finished soak, with the numbers behind them.
function evaluate(run, serverExit, pid) {
  const { before, after, baseline, final, drain, rss, health } = run;
  let client5xx = 0;
  for (const s of Object.values(stats))
    for (const [outcome, n] of Object.entries(s.outcomes)) if (Number(outcome) >= 500) client5xx += n;
  const serverSide5xx = after && before ? server5xx(after) - server5xx(before) : null;
  const bound = Math.min((rss.start ?? 0) * cfg.rssGrowthPct / 100, cfg.rssGrowthMiB * MiB);
  const growth = rss.start === null || rss.end === null ? null : rss.end - rss.start;
  const checks = {
    expected_statuses: { ok: failures.count === 0, detail: `${failures.count} unexpected outcomes` },
    no_5xx: { ok: client5xx === 0 && serverSide5xx === 0,
              detail: `client saw ${client5xx}, server counted ${serverSide5xx ?? "? (no /metrics)"}` },
    health_latency: { ok: health.n > 0 && health.max <= cfg.healthMaxMs,
                      detail: `max ${health.max.toFixed(1)} ms (limit ${cfg.healthMaxMs})` },
    rss_growth: pid ? { ok: growth !== null && growth <= bound,
                        detail: growth === null ? "no RSS at the end" : `${mib(growth)} MiB (limit ${mib(bound)})` }
                    : { ok: true, detail: "skipped: no --pid" },
    kv_blocks_free: { ok: drain.ok, detail: !drain.m ? "no /metrics"
      : `${drain.m.cai_kv_blocks_free}/${drain.m.cai_kv_blocks_total} free, ${drain.m.cai_num_requests_running} ` +
        `running, ${drain.m.cai_num_requests_waiting} waiting` },
    final_chat: { ok: !final.problem && final.text === baseline.text,
                  detail: final.problem ?? (final.text === baseline.text ? "same greedy text as at the start"
                    : `greedy text changed: ${JSON.stringify(baseline.text)} → ${JSON.stringify(final.text)}`) },
  };
  if (serverExit !== undefined)
    checks.server_exit = { ok: serverExit === 0, detail: `exit code ${serverExit} after SIGTERM` };
  return { checks, client5xx, serverSide5xx, growth };
}

// Prints the table and the checks, then the JSON line; true when every check passed.
function report(run, serverExit, pid) {
  const { drain, rss, health, loadS } = run;
  const { checks, client5xx, serverSide5xx, growth } = evaluate(run, serverExit, pid);
  const ok = Object.values(checks).every((c) => c.ok);
  const nRequests = Object.values(stats).reduce((a, s) => a + s.latency.n, 0);

  const row = (cells, widths) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ");
  const widths = [22, 8, 8, 9, 9, 7];
  console.log(row(["kind", "n", "p50 ms", "p99 ms", "max ms", "failed"], widths) + "  outcomes");
  for (const [kind, s] of Object.entries(stats)) {
    if (skipped.includes(kind)) continue;
    const l = s.latency.summary();
    const outcomes = Object.entries(s.outcomes).map(([o, n]) => `${o}:${n}`).join(" ");
    const cells = [kind, l.n, l.p50_ms ?? "-", l.p99_ms ?? "-", l.max_ms ?? "-", s.failed];
    console.log(`${row(cells, widths)}  ${outcomes}`);
  }
  const h = health.summary();
  console.log(`\n/health probe: n=${h.n} p50=${h.p50_ms} ms p99=${h.p99_ms} ms max=${h.max_ms} ms`);
  console.log(`RSS (MiB): start ${mib(rss.start)} (after ${cfg.warmupMs / 1000}s warm-up), max ${mib(rss.max)}, ` +
              `end ${mib(rss.end)}`);
  console.log(`${nRequests} requests in ${loadS.toFixed(1)} s by ${cfg.clients} clients; 429: ${n429}; ` +
              `keep-alive races: ${nKeepAliveRaces}`);
  for (const [name, c] of Object.entries(checks)) console.log(`${c.ok ? "PASS" : "FAIL"}  ${name}: ${c.detail}`);
  for (const e of failures.examples) console.log(`  failure: ${JSON.stringify(e)}`);
  console.log(JSON.stringify({
    ok, url: origin, model: modelId, seconds: cfg.seconds, clients: cfg.clients, max_tokens: cfg.maxTokens,
    requests: nRequests, requests_per_s: Number((nRequests / loadS).toFixed(1)), n_429: n429,
    keepalive_races: nKeepAliveRaces, failures: failures.count, client_5xx: client5xx, server_5xx: serverSide5xx,
    health: h, rss_mib: { start: mib(rss.start), max: mib(rss.max), end: mib(rss.end), growth: mib(growth) },
    kv: drain.m ? { total: drain.m.cai_kv_blocks_total, free: drain.m.cai_kv_blocks_free } : null,
    checks: Object.fromEntries(Object.entries(checks).map(([k, c]) => [k, c.ok])),
    kinds: Object.fromEntries(Object.entries(stats).map(([k, s]) => [k, s.outcomes])),
  }));
  return ok;
}

async function main() {
  const server = opt.url ? null : await startServer();
  origin = (opt.url ?? server.url).replace(/\/$/, "");
  const pid = server?.proc.pid ?? cfg.pid;
  server?.proc.on("exit", (code, signal) => {
    if (server.stopping) return;
    serverGone = true;
    fail("server_exit", { outcome: code ?? signal, problem: "cai serve exited during the soak" });
  });
  let run, serverExit;
  try {
    run = await soak(pid);
  } finally {
    if (server) {
      server.stopping = true;
      serverExit = await stopServer(server.proc);
    }
  }
  const ok = report(run, serverExit, pid);
  if (!ok && server) console.error(`--- cai serve log (tail) ---\n${server.log().split("\n").slice(-40).join("\n")}`);
  process.exit(ok ? 0 : 1);
}

main().catch((err) => { console.error(err); process.exit(1); });
