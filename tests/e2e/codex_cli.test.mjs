// E2E: Codex CLI (`codex exec`, from npm, pinned in package.json) against a real `cai serve` through /v1/responses, as
// docs/serving.md's recipe configures it: a model provider with wire_api "responses" and a key from the environment.
// Codex sends ~8k tokens of instructions and tools (function tools, a namespace tool, web_search), store false and
// reasoning.encrypted_content; a second turn (`codex exec resume`) sends the whole conversation back as input items.
//
// The model is writeAgentModel's (server_harness.mjs). One server biases end-of-sequence (--logit-bias 1:14, token 1)
// so each turn ends at once and completes; the other lets the random weights write until --max-output-tokens, so the
// streamed text reaches Codex as an agent message and the turn ends as an incomplete response (OpenAI's semantics:
// Codex reports "max_output_tokens"). A third model, written with cai-mkmodel --chain, calls Codex's exec_command tool
// with `pwd` and answers "Done." after its output: a tool round trip. Codex gets a temporary CODEX_HOME with update checks, analytics and feedback off,
// and no network beyond the server (agentEnv).
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { agentEnv, chainLinks, repoRoot, runTool, startServer, tempDir, writeAgentModel } from "./server_harness.mjs";

const codexBin = join(repoRoot, "node_modules", ".bin", "codex");
const KEY = "e2e-key";

// A CODEX_HOME whose config.toml points Codex at the server (the recipe in docs/serving.md).
function codexHome(baseURL, model) {
  const home = tempDir("cai-codex-home-");
  writeFileSync(join(home, "config.toml"), `model = "${model}"
model_provider = "cai"
check_for_update_on_startup = false

[model_providers.cai]
name = "CAI"
base_url = "${baseURL}"
wire_api = "responses"
env_key = "CAI_API_KEY"

[analytics]
enabled = false

[feedback]
enabled = false
`);
  return home;
}

// Runs `codex exec --json ...args` in a scratch directory; resolves to { code, events, stdout, stderr }.
async function codex(home, args) {
  const cwd = join(home, "work");
  mkdirSync(cwd, { recursive: true });
  const env = agentEnv(home, { CODEX_HOME: home, CAI_API_KEY: KEY });
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY"]) delete env[name];
  const r = await runTool(codexBin, ["exec", "--strict-config", "--json", "--skip-git-repo-check", ...args],
                          { cwd, env });
  const events = r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  return { ...r, events };
}

describe("Codex CLI against cai serve (/v1/responses)", () => {
  const model = writeAgentModel();
  let ending;   // ends every answer at once
  let writing;  // writes until --max-output-tokens
  let calling;  // calls exec_command, then answers
  before(async () => {
    const common = ["--api-key", KEY, "--kv-memory", "1GiB"];
    ending = await startServer([...common, "--max-output-tokens", "16", "--logit-bias", "1:14"],
                               { model, ctxSize: 65536 });
    writing = await startServer([...common, "--max-output-tokens", "6"], { model, ctxSize: 65536 });
    const chain = chainLinks([
      ["<｜Assistant｜>", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>exec_command<｜tool▁sep｜>{\"cmd\":\"pwd\"}" +
                         "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"],
      ["<｜tool▁outputs▁end｜>", "Done."],
    ]);
    calling = await startServer([...common, "--max-output-tokens", "64"],
                                { model: writeAgentModel(["--tie-embeddings", "false", "--chain", chain]),
                                  ctxSize: 65536 });
  });
  after(async () => {
    assert.equal(await ending.stop(), 0);
    assert.equal(await writing.stop(), 0);
    assert.equal(await calling.stop(), 0);
  });

  test("a turn completes, and a resumed turn sends the conversation back", async () => {
    const home = codexHome(ending.baseURL, "model");
    const first = await codex(home, ["Say hello"]);
    assert.equal(first.code, 0, `stdout: ${first.stdout}\nstderr: ${first.stderr}`);
    const done = first.events.find((e) => e.type === "turn.completed");
    assert.ok(done, first.stdout);
    // Codex's instructions and tools went through the server's tokenizer.
    assert.ok(done.usage.input_tokens > 3000, JSON.stringify(done.usage));
    assert.match(ending.stderr(), /POST \/v1\/responses 200 model model prompt \d+ tokens/);
    assert.ok(!ending.stderr().includes("Say hello"));  // no prompt text in the log without --log-prompts

    const second = await codex(home, ["resume", "--last", "And goodbye"]);
    assert.equal(second.code, 0, `stdout: ${second.stdout}\nstderr: ${second.stderr}`);
    const again = second.events.find((e) => e.type === "turn.completed");
    assert.ok(again, second.stdout);
    assert.ok(again.usage.input_tokens > done.usage.input_tokens, JSON.stringify([done.usage, again.usage]));
    assert.ok(again.usage.cached_input_tokens > 3000, JSON.stringify(again.usage));  // the prefix cache
  });

  test("a tool round trip: exec_command runs, its output goes back, the model answers", async () => {
    const home = codexHome(calling.baseURL, "model");
    const r = await codex(home, ["Where am I?"]);
    assert.equal(r.code, 0, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const command = r.events.find((e) => e.type === "item.completed" && e.item.type === "command_execution");
    assert.ok(command, r.stdout);
    assert.match(command.item.command, /\bpwd$/);
    assert.equal(command.item.exit_code, 0);
    assert.ok(command.item.aggregated_output.includes(join(home, "work")), command.item.aggregated_output);
    const message = r.events.find((e) => e.type === "item.completed" && e.item.type === "agent_message");
    assert.equal(message?.item.text, "Done.", r.stdout);
    assert.ok(r.events.some((e) => e.type === "turn.completed"), r.stdout);
    // Two requests: the call, then its output sent back with the conversation (mostly from the prefix cache).
    const line = /POST \/v1\/responses 200 model model prompt (\d+) tokens \((\d+) cached\)/g;
    const answered = [...calling.stderr().matchAll(line)];
    assert.equal(answered.length, 2, calling.stderr());
    assert.ok(Number(answered[1][2]) > 3000, answered[1][0]);
  });

  test("streamed text reaches Codex as an agent message", async () => {
    const r = await codex(codexHome(writing.baseURL, "model"), ["Say hello"]);
    const message = r.events.find((e) => e.type === "item.completed" && e.item.type === "agent_message");
    assert.ok(message, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.ok(message.item.text.length > 0, r.stdout);
    const failed = r.events.find((e) => e.type === "turn.failed");
    assert.ok(failed, r.stdout);
    assert.match(failed.error.message, /max_output_tokens/);
  });
});
