// E2E: the built-in chat page in headless Chromium (playwright-core): type, send, see the reply stream in.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";

import { startServer, tempDir, thinkTemplateFile } from "./server_harness.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--no-first-run"];
const SCREENSHOT_DIR = process.env.CAI_SCREENSHOT_DIR ?? "/tmp";

// Outside CI a machine without Chromium skips this suite; under CI (CI=true) a missing browser is a failure.
const missing = !existsSync(CHROMIUM) && `${CHROMIUM} not found (apt-get install chromium)`;
if (missing && process.env.CI) throw new Error(`chat page test cannot run in CI: ${missing}`);

describe("chat page", { skip: missing }, () => {
  let plain;
  let thinking;
  let context;
  before(async () => {
    [plain, thinking] = await Promise.all([startServer(), startServer(["--chat-template", thinkTemplateFile()])]);
    context = await chromium.launchPersistentContext(tempDir("cai-chromium-"), {
      executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1000, height: 720 },
    });
  });
  after(async () => {
    await context?.close();
    await Promise.all([plain?.stop(), thinking?.stop()]);
  });

  // Sends `text` and waits until the reply has finished streaming; returns the page.
  async function chat(origin, text, screenshot) {
    const page = await context.newPage();
    const fromOutside = [];
    page.on("request", (req) => { if (!req.url().startsWith(origin)) fromOutside.push(req.url()); });
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => document.getElementById("status").textContent === "ready");
    await page.fill("#input", text);
    await page.click("#send");
    // While streaming the button reads "Stop" and the reply grows; afterwards it reads "Send" again.
    await page.waitForFunction(() => document.querySelector(".msg.assistant")?.textContent.length > "Assistant".length,
                               null, { timeout: 60_000 });
    await page.waitForFunction(() => document.getElementById("send").textContent === "Send", null, { timeout: 60_000 });
    await page.screenshot({ path: join(SCREENSHOT_DIR, screenshot) });
    assert.deepEqual(fromOutside, [], "the page must not load external resources");
    return page;
  }

  test("type, send and see a streamed reply", async () => {
    const page = await chat(plain.origin, "Once upon a time", "cai-chat-page.png");
    assert.match(await page.textContent(".msg.user"), /Once upon a time/);
    const answer = await page.textContent(".msg.assistant .answer");
    assert.ok(answer.trim().length > 0, "no reply text");
    assert.equal(await page.$(".msg.assistant .error"), null);
    assert.equal(await page.$("details.thinking"), null);
  });

  test("reasoning shows in a collapsible Thinking box", async () => {
    const page = await chat(thinking.origin, "Once upon a time", "cai-chat-page-thinking.png");
    assert.equal(await page.textContent("details.thinking summary"), "Thinking");
    const reasoning = await page.textContent("details.thinking .text");
    assert.ok(reasoning.trim().length > 0, "empty Thinking box");
  });
});
