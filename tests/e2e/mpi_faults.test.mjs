// E2E: a server over two MPI ranks (`mpirun -np 2 cai serve --tp 2`) when a rank fails (docs/multi-node.md). A worker
// killed (-9) or stopped (SIGSTOP) in the middle of a streaming request: the client gets a rank_failed error event,
// and the job exits non-zero within the collective deadline. The leader killed: the workers exit with it. A stop of the
// leader ends the job cleanly (exit 0).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { mpirun, startServer } from "./server_harness.mjs";

const DEADLINE_S = 3;
const ARGS = ["--device", "cpu", "-t", "1", "--tp", "2", "--collective-timeout", String(DEADLINE_S)];

// Whether a process runs (a zombie waiting for its parent to reap it does not).
function alive(pid) {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

// Starts a long greedy stream (seconds of tokens); once its first chunk arrived, gives { done }: its whole text.
async function openStream(server) {
  const res = await fetch(`${server.baseURL}/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "Once upon a time", max_tokens: 16000, ignore_eos: true, temperature: 0,
                           stream: true }),
  });
  assert.equal(res.status, 200);
  const decoder = new TextDecoder();
  let text = "";
  const reader = res.body.getReader();
  const done = (async () => {
    for (;;) {
      const { value, done: end } = await reader.read().catch(() => ({ done: true }));
      if (end) return text;
      text += decoder.decode(value);
    }
  })();
  while (!text.includes("data: ")) await new Promise((ok) => setTimeout(ok, 10));
  return { done };  // wrapped: an async function returning the promise itself would wait for it
}

describe("cai serve over two MPI ranks, when a rank fails", { timeout: 120_000 }, () => {
  for (const signal of ["SIGKILL", "SIGSTOP"]) {
    test(`a worker's ${signal} mid-stream: rank_failed for the client, the job exits non-zero in the deadline`,
         async () => {
      const server = await startServer(ARGS, { launcher: mpirun(2), ctxSize: 16384 });  // seconds of tokens
      const worker = server.rankPids()["1"];
      assert.ok(worker, server.stderr());
      const stream = (await openStream(server)).done;
      const t0 = Date.now();
      process.kill(worker, signal);
      const text = await stream;
      assert.match(text, /"code":"rank_failed"/, text.slice(-600));
      if (signal === "SIGSTOP") {  // the leader still answers for the moment before it ends the job
        const health = await fetch(`${server.origin}/health`);
        assert.equal(health.status, 503);
        const body = await health.json();
        assert.equal(body.status, "rank_failed");
        assert.match(body.error, /rank 1 did not answer within 3\.0 s/);
        assert.match(await (await fetch(`${server.origin}/metrics`)).text(), /^cai_rank_failed 1$/m);
      }
      const code = await server.exited;
      const seconds = (Date.now() - t0) / 1000;
      assert.notEqual(code, 0);
      assert.ok(seconds < DEADLINE_S + 5, `exited after ${seconds} s`);
      assert.ok(!alive(worker), "the worker outlived the job");
    });
  }

  test("the leader killed: the workers exit too", async () => {
    const server = await startServer(ARGS, { launcher: mpirun(2) });
    const { 0: leader, 1: worker } = server.rankPids();
    process.kill(leader, "SIGKILL");
    assert.notEqual(await server.exited, 0);
    assert.ok(!alive(worker), "the worker outlived the job");
  });

  test("/health and /metrics while every rank is up; a stopped leader ends the job with 0", async () => {
    const server = await startServer(ARGS, { launcher: mpirun(2) });
    const health = await fetch(`${server.origin}/health`);
    assert.equal(health.status, 200);
    const metrics = await (await fetch(`${server.origin}/metrics`)).text();
    assert.match(metrics, /^cai_process_ranks 2$/m);
    assert.match(metrics, /^cai_rank_failed 0$/m);
    assert.match(server.stderr(), /\[rank 1\] \[info\] worker of 2 ranks/);
    assert.equal(await server.stop(), 0);
  });
});
