// Starts a real `cai serve` on a free loopback port for the e2e tests and stops it afterwards.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { constants, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
// The `cai` binary under test: $CAI_BIN, or build/cai.
export const caiBin = process.env.CAI_BIN ?? join(repoRoot, "build", "cai");
export const defaultModel = join(repoRoot, "data", "models", "TinyStories-656K-Q8_0.gguf");

// A fresh temporary directory, removed when the test process exits.
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// A chat template that opens <think> in the prompt, as the DeepSeek-R1 distills' templates do.
export function thinkTemplateFile() {
  const dir = tempDir("cai-e2e-");
  const path = join(dir, "think.jinja");
  writeFileSync(path, "{% for m in messages %}{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}<think>\n{% endif %}");
  return path;
}

// Arguments every server of this run gets first: $CAI_E2E_SERVER_ARGS, space-separated (scripts/test.sh runs the OpenAI
// tests again with "--device simt:0,simt:1 --tp 2", a model over two devices).
const runArgs = (process.env.CAI_E2E_SERVER_ARGS ?? "").split(" ").filter((a) => a.length > 0);

// What starts the server of this run: $CAI_E2E_LAUNCHER, space-separated, before the binary (scripts/test.sh runs the
// OpenAI tests again under "mpirun ... -np 2", the model over two processes).
const runLauncher = (process.env.CAI_E2E_LAUNCHER ?? "").split(" ").filter((a) => a.length > 0);

// The command that launches an MPI job of `ranks` processes on this machine (as root where CI runs as root, more ranks
// than cores, no core binding, shared memory without the single-copy mechanism that containers' ptrace rules refuse).
export function mpirun(ranks) {
  return ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
          "--mca", "btl_vader_single_copy_mechanism", "none", "-np", String(ranks)];
}

// Spawns `cai serve -m model --port 0 ...extraArgs` (with `env` added to this process's environment; after `launcher`,
// e.g. mpirun(2), where given), reads the bound address from its "chat page:" log line and waits until /health answers
// 200. Returns { baseURL, origin, stop(), stderr(), rankPids(), exited }: `exited` resolves to the exit code.
export async function startServer(extraArgs = [], { timeoutMs = 120_000, model = defaultModel, ctxSize = 256, env = {},
                                                    launcher = runLauncher } = {}) {
  const args = ["serve", "-m", model, "--host", "127.0.0.1", "--port", "0", "--ctx-size", String(ctxSize),
                ...runArgs, ...extraArgs];
  const command = [...launcher, caiBin, ...args];
  const proc = spawn(command[0], command.slice(1), { stdio: ["ignore", "ignore", "pipe"],
                                                    env: { ...process.env, ...env } });
  const exited = new Promise((ok) => proc.on("exit", (code, signal) => ok(code ?? 128 + constants.signals[signal])));
  let log = "";
  const origin = await new Promise((resolveOrigin, reject) => {
    const timer = setTimeout(() => reject(new Error(`cai serve did not log its address:\n${log}`)), timeoutMs);
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (text) => {
      log += text;
      const m = log.match(/chat page: (http:\/\/[0-9.]+:\d+)\//);
      if (m) { clearTimeout(timer); resolveOrigin(m[1]); }
    });
    proc.on("exit", (code) => { clearTimeout(timer); reject(new Error(`cai serve exited with ${code}:\n${log}`)); });
    proc.on("error", (err) => { clearTimeout(timer); reject(err); });
  });
  // The pid of each rank of an MPI job (its "rank N of M (pid P" log line); empty for one process.
  const rankPids = () => Object.fromEntries([...log.matchAll(/rank (\d+) of \d+ \(pid (\d+)/g)]
    .map((m) => [m[1], Number(m[2])]));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await fetch(`${origin}/health`).catch(() => null);
    if (r && r.status === 200) break;
    if (r && r.status !== 503) throw new Error(`/health answered ${r.status}`);
    if (Date.now() > deadline) throw new Error(`cai serve did not become healthy:\n${log}`);
    await new Promise((ok) => setTimeout(ok, 100));
  }
  return {
    origin,
    baseURL: `${origin}/v1`,
    exited,
    stderr: () => log,
    rankPids,
    // Under mpirun the leader is told to stop (it stops the workers; mpirun then exits 0), not mpirun itself (which
    // exits 1 on a signal whatever its ranks do).
    stop: () => new Promise((ok) => {
      if (proc.exitCode !== null) return ok(proc.exitCode);
      proc.on("exit", (code) => ok(code));
      const leader = rankPids()["0"];
      if (leader) process.kill(leader, "SIGTERM");
      else proc.kill("SIGTERM");
    }),
  };
}

// The first capture of `pattern` in the server's /metrics text, as a number.
export async function metric(server, pattern) {
  const text = await (await fetch(`${server.origin}/metrics`)).text();
  const m = text.match(pattern);
  assert.ok(m, `no ${pattern} in /metrics`);
  return Number(m[1]);
}

// A model for the coding-agent tests: random weights of a tiny Qwen2 shape in a Hugging Face directory, with
// DeepSeek-V3's real BPE vocabulary and chat template (tests/data/tokenizer/deepseek-v3), so that an agent's long
// system prompt stays as few tokens as on a real model (a byte-level vocabulary makes it several times longer).
// Token 0 begins and token 1 ends a sequence.
// `mkmodelArgs` go to cai-mkmodel (e.g. --chain).
export function writeAgentModel(mkmodelArgs = []) {
  const dir = join(tempDir("cai-agent-model-"), "model");
  const made = spawnSync(join(dirname(caiBin), "cai-mkmodel"),
                         ["--arch", "qwen2", "--preset", "tiny", "--hidden", "64", "--heads", "2", "--kv-heads", "1",
                          "--ffn", "128", "--layers", "1", "--vocab", "129280", "--ctx", "65536", "--format", "hf",
                          "--dtype", "f16", ...mkmodelArgs, "-o", dir], { encoding: "utf8" });
  assert.equal(made.status, 0, made.stderr);
  copyFileSync(join(dirname(caiBin), "testdata", "tokenizer", "deepseek-v3", "tokenizer.json"),
               join(dir, "tokenizer.json"));
  copyFileSync(join(repoRoot, "tests", "data", "tokenizer", "deepseek-v3", "tokenizer_config.json"),
               join(dir, "tokenizer_config.json"));
  const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ ...config, bos_token_id: 0, eos_token_id: 1 }));
  return dir;
}

// Runs a client's command line to its end (killed after `timeoutMs`); resolves to { code, stdout, stderr }.
export function runTool(bin, args, { cwd, env, timeoutMs = 120_000 }) {
  const proc = spawn(bin, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d) => { stdout += d; });
  proc.stderr.on("data", (d) => { stderr += d; });
  return new Promise((ok) => {
    const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
    proc.on("exit", (code) => { clearTimeout(timer); ok({ code, stdout, stderr }); });
  });
}

// The environment a coding-agent CLI runs in: this process's, with a scratch HOME (and XDG directories under it), the
// npm registry unreachable and offline (some agents install plugins at start), and every proxy-aware HTTP client sent
// to a dead loopback port for anything but the server: no update check, telemetry or download leaves the machine.
export function agentEnv(home, extra = {}) {
  const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config"), XDG_DATA_HOME: join(home, ".data"),
                XDG_CACHE_HOME: join(home, ".cache"), XDG_STATE_HOME: join(home, ".state"),
                npm_config_registry: "http://127.0.0.1:9/", npm_config_offline: "true",
                HTTP_PROXY: "http://127.0.0.1:9", HTTPS_PROXY: "http://127.0.0.1:9", NO_PROXY: "127.0.0.1,localhost",
                ...extra };
  for (const name of ["http_proxy", "https_proxy", "no_proxy", "all_proxy", "ALL_PROXY"]) delete env[name];
  return env;
}

// The `cai-mkmodel --chain` links of an agent model (writeAgentModel) that answers each prompt ending in one of `turns`'
// texts with that turn's answer: `turns` is [[prompt tail, answer], ...]; the tail's last token leads to the answer's
// first, each answer token to the next, the last to end-of-sequence (token 1). No token may lead two links.
export function chainLinks(turns) {
  const tokenizer = join(dirname(caiBin), "testdata", "tokenizer", "deepseek-v3", "tokenizer.json");
  const ids = (text) => {
    const r = spawnSync(caiBin, ["tokenize", "-m", tokenizer, "-p", text], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout).ids;
  };
  const links = [];
  for (const [tail, answer] of turns) {
    const chain = [ids(tail).at(-1), ...ids(answer), 1];
    for (let i = 0; i + 1 < chain.length; ++i) links.push(`${chain[i]}:${chain[i + 1]}`);
  }
  assert.equal(new Set(links.map((l) => l.split(":")[0])).size, links.length, links.join(","));
  return links.join(",");
}
