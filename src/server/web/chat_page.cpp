// The built-in chat page: HTML, CSS and JS in one document; streams replies and shows R1 reasoning in a "Thinking" box.
#include "server/web/chat_page.h"

namespace cai::server {

namespace {

constexpr std::string_view kPage = R"CAIPAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>CAI chat</title>
<style>
  :root { --bg: #f6f7f9; --panel: #fff; --text: #1d2330; --muted: #6b7383; --accent: #2f6fed; --line: #e2e5ea;
          --user: #e8f0fe; --think: #f3f1fa; --error: #b42318; }
  * { box-sizing: border-box; }
  html, body { height: 100%; margin: 0; }
  body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--text);
         background: var(--bg); display: flex; flex-direction: column; }
  header { display: flex; align-items: center; gap: 12px; padding: 10px 18px; background: var(--panel);
           border-bottom: 1px solid var(--line); }
  header h1 { font-size: 17px; margin: 0; }
  #model { color: var(--muted); font-size: 13px; }
  #status { margin-left: auto; font-size: 13px; color: var(--muted); }
  #dashboard-link { font-size: 13px; color: var(--accent); text-decoration: none; }
  #settings-toggle { border: 1px solid var(--line); background: none; border-radius: 6px; padding: 4px 10px;
                     cursor: pointer; color: var(--text); }
  #settings { display: none; gap: 14px; flex-wrap: wrap; padding: 10px 18px; background: var(--panel);
              border-bottom: 1px solid var(--line); font-size: 13px; }
  #settings.open { display: flex; }
  #settings label { display: flex; flex-direction: column; gap: 3px; color: var(--muted); }
  #settings input, #settings textarea { font: inherit; padding: 4px 6px; border: 1px solid var(--line);
                                        border-radius: 5px; color: var(--text); }
  #settings textarea { width: 320px; height: 48px; resize: vertical; }
  main { flex: 1; overflow-y: auto; padding: 18px; }
  #log { max-width: 820px; margin: 0 auto; display: flex; flex-direction: column; gap: 14px; }
  .msg { padding: 10px 14px; border-radius: 10px; white-space: pre-wrap; word-wrap: break-word; max-width: 100%; }
  .user { background: var(--user); align-self: flex-end; max-width: 80%; }
  .assistant { background: var(--panel); border: 1px solid var(--line); }
  .role { font-size: 12px; font-weight: 600; color: var(--muted); margin-bottom: 4px; white-space: normal; }
  details.thinking { background: var(--think); border-radius: 8px; padding: 6px 10px; margin-bottom: 8px;
                     font-size: 13.5px; color: #4a4560; }
  details.thinking summary { cursor: pointer; font-weight: 600; color: #5b4b9a; }
  .thinking .text { white-space: pre-wrap; margin-top: 4px; }
  .error { color: var(--error); }
  .empty { color: var(--muted); text-align: center; margin-top: 12vh; }
  form { display: flex; gap: 10px; max-width: 820px; width: 100%; margin: 0 auto; padding: 12px 18px 18px; }
  #input { flex: 1; font: inherit; padding: 10px 12px; border: 1px solid var(--line); border-radius: 10px;
           resize: none; height: 46px; max-height: 200px; background: var(--panel); color: var(--text); }
  #send { font: inherit; font-weight: 600; border: none; border-radius: 10px; padding: 0 22px; color: #fff;
          background: var(--accent); cursor: pointer; }
  #send.stop { background: #5f6b7d; }
  footer { background: var(--panel); border-top: 1px solid var(--line); }
</style>
</head>
<body>
<header>
  <h1>CAI chat</h1><span id="model"></span>
  <span id="status">connecting…</span>
  <a id="dashboard-link" href="/dashboard">Dashboard</a>
  <button id="settings-toggle" type="button">Settings</button>
</header>
<div id="settings">
  <label>System prompt<textarea id="system" placeholder="optional"></textarea></label>
  <label>Temperature<input id="temperature" type="number" min="0" max="2" step="0.1" value="0.7"></label>
  <label>Max tokens<input id="max-tokens" type="number" min="1" step="1" placeholder="model default"></label>
  <label>API key<input id="api-key" type="password" placeholder="if the server needs one"></label>
  <label>&nbsp;<button id="clear" type="button">Clear chat</button></label>
</div>
<main><div id="log"><div class="empty" id="empty">Send a message to start.</div></div></main>
<footer>
  <form id="form">
    <textarea id="input" placeholder="Type a message (Enter sends, Shift+Enter for a new line)" autofocus></textarea>
    <button id="send" type="submit">Send</button>
  </form>
</footer>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const turns = [];
let controller = null;

$("api-key").value = localStorage.getItem("cai-api-key") || "";
$("api-key").addEventListener("change", () => localStorage.setItem("cai-api-key", $("api-key").value));
$("settings-toggle").addEventListener("click", () => $("settings").classList.toggle("open"));
$("clear").addEventListener("click", () => { turns.length = 0; $("log").replaceChildren(); });

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("api-key").value.trim();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

async function refreshModel() {
  try {
    const r = await fetch("/v1/models", { headers: headers() });
    const body = await r.json();
    if (r.ok) { $("model").textContent = body.data[0].id; $("status").textContent = "ready"; }
    else { $("status").textContent = body.error ? body.error.message : "HTTP " + r.status; }
    if (r.status === 503) setTimeout(refreshModel, 1000);
  } catch (e) { $("status").textContent = "server unreachable"; setTimeout(refreshModel, 2000); }
}

function addMessage(role) {
  const empty = $("empty");
  if (empty) empty.remove();
  const div = document.createElement("div");
  div.className = "msg " + role;
  const label = document.createElement("div");
  label.className = "role";
  label.textContent = role === "user" ? "You" : "Assistant";
  div.appendChild(label);
  $("log").appendChild(div);
  return div;
}

// The assistant bubble: an optional Thinking box (created on the first reasoning text) and the answer.
function assistantView() {
  const div = addMessage("assistant");
  const answer = document.createElement("div");
  answer.className = "answer";
  div.appendChild(answer);
  let thinking = null;
  return {
    reasoning(text) {
      if (!thinking) {
        thinking = document.createElement("details");
        thinking.className = "thinking";
        thinking.open = true;
        thinking.innerHTML = "<summary>Thinking</summary><div class='text'></div>";
        div.insertBefore(thinking, answer);
      }
      thinking.querySelector(".text").textContent += text;
    },
    content(text) {
      if (thinking && thinking.open && !answer.textContent) thinking.open = false;
      answer.textContent += text;
    },
    error(text) { const e = document.createElement("div"); e.className = "error"; e.textContent = text; div.appendChild(e); },
    scroll() { const m = document.querySelector("main"); m.scrollTop = m.scrollHeight; },
  };
}

// Reads an SSE body, calling onData with each parsed "data:" JSON until [DONE].
async function readSse(response, onData) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        onData(JSON.parse(data));
      }
    }
  }
}

async function send(text) {
  turns.push({ role: "user", content: text });
  addMessage("user").appendChild(document.createTextNode(text));
  const view = assistantView();
  view.scroll();
  const messages = [];
  const system = $("system").value.trim();
  if (system) messages.push({ role: "system", content: system });
  messages.push(...turns);
  const body = { messages, stream: true, temperature: Number($("temperature").value) };
  const maxTokens = parseInt($("max-tokens").value, 10);
  if (maxTokens > 0) body.max_tokens = maxTokens;
  controller = new AbortController();
  $("send").textContent = "Stop";
  $("send").classList.add("stop");
  let reply = "";
  try {
    const r = await fetch("/v1/chat/completions",
                          { method: "POST", headers: headers(), body: JSON.stringify(body), signal: controller.signal });
    if (!r.ok) {
      const err = await r.json().catch(() => ({}));
      throw new Error(err.error ? err.error.message : "HTTP " + r.status);
    }
    await readSse(r, (chunk) => {
      if (chunk.error) { view.error(chunk.error.message); return; }
      const delta = (chunk.choices[0] || {}).delta || {};
      if (delta.reasoning_content) view.reasoning(delta.reasoning_content);
      if (delta.content) { view.content(delta.content); reply += delta.content; }
      view.scroll();
    });
  } catch (e) {
    if (e.name !== "AbortError") view.error(String(e.message || e));
  } finally {
    turns.push({ role: "assistant", content: reply });
    controller = null;
    $("send").textContent = "Send";
    $("send").classList.remove("stop");
  }
}

$("form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  if (controller) { controller.abort(); return; }
  const text = $("input").value.trim();
  if (!text) return;
  $("input").value = "";
  send(text);
});
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("form").requestSubmit(); }
});
refreshModel();
</script>
</body>
</html>
)CAIPAGE";

}  // namespace

std::string_view chat_page_html() { return kPage; }

}  // namespace cai::server
