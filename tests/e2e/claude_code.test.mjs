// E2E: Claude Code (the `claude` CLI from npm, pinned in package.json) in print mode against a real `cai serve`, as the
// README's recipe runs it: ANTHROPIC_BASE_URL and a key, nothing else; its own default model and its sonnet / haiku
// aliases reach the one served model through `--served-model-name 'claude-*'`; plain and stream-json output.
//
// The model is writeAgentModel's (server_harness.mjs): DeepSeek-V3's real BPE vocabulary keeps Claude Code's
// ~11k-token system prompt ~11k tokens. Random weights never choose end-of-sequence by themselves: the server biases it
// (--logit-bias 1:14, token 1 is <｜end▁of▁sentence｜>) and caps answers (--max-output-tokens), so each turn ends at once with `end_turn`. Claude Code
// gets a temporary HOME and no traffic beyond the server (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, agentEnv).
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { agentEnv, repoRoot, runTool, startServer, tempDir, writeAgentModel } from "./server_harness.mjs";

const claudeBin = join(repoRoot, "node_modules", ".bin", "claude");
const KEY = "e2e-key";

// Runs `claude -p PROMPT ...args` against the server; resolves to { code, stdout, stderr }.
function claude(origin, args) {
  const home = tempDir("cai-claude-home-");
  const env = agentEnv(home, { ANTHROPIC_BASE_URL: origin, ANTHROPIC_AUTH_TOKEN: KEY,
                              CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1" });
  for (const name of ["ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_API_KEY"]) delete env[name];
  return runTool(claudeBin, ["-p", "Say hello", ...args], { cwd: home, env });
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
                               { model: writeAgentModel(), ctxSize: 65536 });
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
