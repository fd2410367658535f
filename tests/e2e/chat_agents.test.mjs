// E2E: coding agents that speak /v1/chat/completions, from npm and pinned in package.json, against a real `cai serve`
// as docs/serving.md's recipes configure them: Continue's CLI (`cn -p` with a config.yaml naming an "openai" provider)
// and OpenCode (`opencode run` with an "@ai-sdk/openai-compatible" provider in opencode.json). Each sends its own
// system prompt and tools (thousands of tokens) and, for OpenCode, a second request that titles the session.
//
// The model is writeAgentModel's (server_harness.mjs), writing random text until --max-output-tokens; the agents get
// a scratch HOME and no network beyond the server (agentEnv).
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { agentEnv, repoRoot, runTool, startServer, tempDir, writeAgentModel } from "./server_harness.mjs";

const bin = (name) => join(repoRoot, "node_modules", ".bin", name);
const KEY = "e2e-key";

// The chat requests the server answered since its log had `from` characters: [{ prompt, cached }].
function answered(server, from) {
  const line = /POST \/v1\/chat\/completions 200 model model prompt (\d+) tokens \((\d+) cached\)/g;
  return [...server.stderr().slice(from).matchAll(line)].map((m) => ({ prompt: Number(m[1]), cached: Number(m[2]) }));
}

// A scratch home with a work directory inside; resolves paths under it.
function scratch(prefix) {
  const home = tempDir(prefix);
  mkdirSync(join(home, "work"), { recursive: true });
  return home;
}

describe("chat-completions agents against cai serve", () => {
  let server;
  before(async () => {
    server = await startServer(["--api-key", KEY, "--max-output-tokens", "6", "--kv-memory", "1GiB"],
                               { model: writeAgentModel(), ctxSize: 65536 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  test("Continue CLI: cn -p prints the model's answer", async () => {
    const home = scratch("cai-continue-");
    const config = join(home, "config.yaml");
    writeFileSync(config, `name: cai
version: 1.0.0
schema: v1
models:
  - name: cai
    provider: openai
    model: model
    apiBase: ${server.baseURL}
    apiKey: ${KEY}
    roles: [chat, edit, apply]
`);
    const from = server.stderr().length;
    const r = await runTool(bin("cn"), ["-p", "--config", config, "--format", "json", "Say hello"],
                            { cwd: join(home, "work"),
                              env: agentEnv(home, { CONTINUE_CLI_ENABLE_TELEMETRY: "0",
                                                    CONTINUE_METRICS_ENABLED: "0" }) });
    assert.equal(r.code, 0, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split("\n").at(-1));
    assert.equal(out.status, "success", r.stdout);
    assert.ok(out.response.trim().length > 0, r.stdout);
    const requests = answered(server, from);
    assert.equal(requests.length, 1, server.stderr().slice(from));
    assert.ok(requests[0].prompt > 500, JSON.stringify(requests));  // Continue's system prompt and tools
  });

  test("OpenCode: opencode run streams the answer", async () => {
    const home = scratch("cai-opencode-");
    const config = join(home, "opencode.json");
    writeFileSync(config, JSON.stringify({
      provider: { cai: { npm: "@ai-sdk/openai-compatible", name: "CAI",
                         options: { baseURL: server.baseURL, apiKey: KEY }, models: { model: { name: "model" } } } },
      model: "cai/model", autoupdate: false, share: "disabled",
    }));
    const from = server.stderr().length;
    const env = agentEnv(home, { OPENCODE_CONFIG: config, OPENCODE_DISABLE_MODELS_FETCH: "1",
                                 OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_SHARE: "1",
                                 OPENCODE_DISABLE_LSP_DOWNLOAD: "1", OPENCODE_DISABLE_DEFAULT_PLUGINS: "1" });
    const r = await runTool(bin("opencode"), ["run", "--format", "json", "Say hello"],
                            { cwd: join(home, "work"), env });
    assert.equal(r.code, 0, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const events = r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    const text = events.filter((e) => e.type === "text").map((e) => e.part.text).join("");
    assert.ok(text.length > 0, r.stdout);
    const finish = events.find((e) => e.type === "step_finish");
    assert.ok(finish, r.stdout);
    assert.equal(finish.part.reason, "length");  // --max-output-tokens
    assert.equal(finish.part.tokens.output, 6);
    const requests = answered(server, from);
    assert.ok(requests.length >= 1, server.stderr().slice(from));
    assert.ok(Math.max(...requests.map((q) => q.prompt)) > 3000, JSON.stringify(requests));  // OpenCode's prompt
  });
});
