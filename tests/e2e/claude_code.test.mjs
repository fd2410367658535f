// E2E: Claude Code (the `claude` CLI from npm, pinned in package.json) in print mode against a real `cai serve`, as the
// README's recipe runs it: ANTHROPIC_BASE_URL and a key, nothing else; its own default model and its sonnet / haiku
// aliases reach the one served model through `--served-model-name 'claude-*'`; plain and stream-json output.
//
// The model is written here: random weights of a tiny Qwen2 shape over DeepSeek-V3's real BPE vocabulary and chat
// template (tests/data/tokenizer/deepseek-v3), so Claude Code's ~11k-token system prompt stays ~11k tokens. Random
// weights never choose end-of-sequence by themselves: the server biases it (--logit-bias 1:14, token 1 is
// <｜end▁of▁sentence｜>) and caps answers (--max-output-tokens), so each turn ends at once with `end_turn`. Claude Code
// gets a temporary HOME and no traffic beyond the server (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";

import { caiBin, repoRoot, startServer, tempDir } from "./server_harness.mjs";

const claudeBin = join(repoRoot, "node_modules", ".bin", "claude");
const KEY = "e2e-key";

// A tiny random Qwen2 model in a Hugging Face directory with DeepSeek-V3's tokenizer and template.
function writeModel() {
  const dir = join(tempDir("cai-claude-code-"), "model");
  const made = spawnSync(join(dirname(caiBin), "cai-mkmodel"),
                         ["--arch", "qwen2", "--preset", "tiny", "--hidden", "64", "--heads", "2", "--kv-heads", "1",
                          "--ffn", "128", "--layers", "1", "--vocab", "129280", "--ctx", "65536", "--format", "hf",
                          "--dtype", "f16", "-o", dir], { encoding: "utf8" });
  assert.equal(made.status, 0, made.stderr);
  copyFileSync(join(dirname(caiBin), "testdata", "tokenizer", "deepseek-v3", "tokenizer.json"),
               join(dir, "tokenizer.json"));
  copyFileSync(join(repoRoot, "tests", "data", "tokenizer", "deepseek-v3", "tokenizer_config.json"),
               join(dir, "tokenizer_config.json"));
  const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ ...config, bos_token_id: 0, eos_token_id: 1 }));
  return dir;
}

// Runs `claude -p PROMPT ...args` against the server; resolves to { code, stdout, stderr }.
function claude(origin, args) {
  const home = tempDir("cai-claude-home-");
  const env = { ...process.env, HOME: home, ANTHROPIC_BASE_URL: origin, ANTHROPIC_AUTH_TOKEN: KEY,
                CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1" };
  for (const name of ["ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_API_KEY"]) delete env[name];
  const proc = spawn(claudeBin, ["-p", "Say hello", ...args], { cwd: home, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d) => { stdout += d; });
  proc.stderr.on("data", (d) => { stderr += d; });
  return new Promise((ok) => {
    const timer = setTimeout(() => proc.kill("SIGKILL"), 120_000);
    proc.on("exit", (code) => { clearTimeout(timer); ok({ code, stdout, stderr }); });
  });
}

// The model ids of the /v1/messages requests answered since the log had `from` characters.
function modelsAnswered(log, from) {
  return [...log.slice(from).matchAll(/POST \/v1\/messages 200 model (\S+)/g)].map((m) => m[1]);
}

describe("Claude Code against cai serve", () => {
  let server;
  before(async () => {
    server = await startServer(["--api-key", KEY, "--served-model-name", "claude-*", "--max-output-tokens", "16",
                                "--logit-bias", "1:14", "--kv-memory", "1GiB"],
                               { model: writeModel(), ctxSize: 65536 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  test("print mode with Claude Code's own default model", async () => {
    const from = server.stderr().length;
    const r = await claude(server.origin, []);
    assert.equal(r.code, 0, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const models = modelsAnswered(server.stderr(), from);
    assert.ok(models.length >= 1, server.stderr().slice(from));
    assert.ok(models.every((m) => m.startsWith("claude-")), models.join(", "));
  });

  for (const alias of ["sonnet", "haiku"]) {
    test(`--model ${alias}`, async () => {
      const from = server.stderr().length;
      const r = await claude(server.origin, ["--model", alias]);
      assert.equal(r.code, 0, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
      const models = modelsAnswered(server.stderr(), from);
      assert.ok(models.some((m) => m.startsWith(`claude-${alias}-`)), models.join(", "));
    });
  }

  test("stream-json output ends with a successful result", async () => {
    const r = await claude(server.origin, ["--output-format", "stream-json", "--verbose"]);
    assert.equal(r.code, 0, r.stderr);
    const events = r.stdout.split("\n").filter((l) => l.trim().length > 0).map((l) => JSON.parse(l));
    assert.equal(events[0].type, "system");
    const result = events.find((e) => e.type === "result");
    assert.ok(result, r.stdout);
    assert.equal(result.subtype, "success", r.stdout);
    assert.equal(result.is_error, false, r.stdout);
    assert.equal(result.stop_reason, "end_turn", r.stdout);
    assert.ok(result.num_turns >= 1);
    // The prompt went through the server: Claude Code's system prompt, most of it served by the prefix cache.
    assert.ok(result.usage.input_tokens + result.usage.cache_read_input_tokens > 5000, JSON.stringify(result.usage));
  });
});
