// The dashboard page: HTML, CSS and JS in one document; polls /v1/status every second and draws SVG charts.
#include "server/web/dashboard_page.h"

namespace cai::server {

namespace {

constexpr std::string_view kDashboard = R"CAIPAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>CAI dashboard</title>
<style>
  :root { --bg: #f6f7f9; --panel: #fff; --text: #1d2330; --muted: #6b7383; --accent: #2f6fed; --line: #e2e5ea;
          --warn: #b54708; --bad: #b42318; --good: #067647; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--text);
         background: var(--bg); }
  header { display: flex; align-items: baseline; gap: 12px; padding: 10px 18px; background: var(--panel);
           border-bottom: 1px solid var(--line); }
  header h1 { font-size: 17px; margin: 0; }
  header a { font-size: 13px; color: var(--accent); text-decoration: none; }
  #model, #uptime { color: var(--muted); font-size: 13px; }
  #live { margin-left: auto; font-size: 13px; color: var(--muted); }
  #live.on { color: var(--good); }
  #live.off { color: var(--bad); }
  main { max-width: 1200px; margin: 0 auto; padding: 14px 18px; display: flex; flex-direction: column; gap: 14px; }
  .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 10px; }
  .card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
  .card .label { font-size: 12px; color: var(--muted); }
  .card .value { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
  .card .sub { font-size: 12px; color: var(--muted); font-variant-numeric: tabular-nums; }
  .bar { height: 6px; background: var(--line); border-radius: 3px; margin-top: 6px; overflow: hidden; }
  .bar > div { height: 100%; background: var(--accent); width: 0; }
  .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 10px; }
  .chart { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; }
  .chart .label { font-size: 12px; color: var(--muted); display: flex; justify-content: space-between; }
  svg { width: 100%; height: 90px; display: block; }
  svg polyline { fill: none; stroke: var(--accent); stroke-width: 1.5; }
  svg polyline.second { stroke: var(--warn); }
  table { width: 100%; border-collapse: collapse; background: var(--panel); border: 1px solid var(--line);
          border-radius: 8px; font-variant-numeric: tabular-nums; }
  th, td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line); font-size: 13px; }
  th { color: var(--muted); font-weight: 500; font-size: 12px; }
  td .desc { color: var(--muted); font-size: 12px; }
  td .bar { width: 140px; }
  .throttled { color: var(--warn); font-weight: 600; }
  #error { color: var(--bad); font-size: 13px; }
</style>
</head>
<body>
<header>
  <h1>CAI dashboard</h1><span id="model"></span><span id="uptime"></span>
  <a href="/">Chat</a>
  <span id="live">connecting…</span>
</header>
<main>
  <div id="error"></div>
  <section class="cards">
    <div class="card"><div class="label">Generated tokens/s</div><div class="value" id="tok-s">–</div>
      <div class="sub" id="prompt-tok-s">prompt –</div></div>
    <div class="card"><div class="label">Requests</div><div class="value" id="running">–</div>
      <div class="sub" id="waiting">waiting –</div></div>
    <div class="card"><div class="label">KV cache blocks</div><div class="value" id="kv-used">–</div>
      <div class="sub" id="kv-total">of –</div><div class="bar"><div id="kv-bar"></div></div></div>
    <div class="card"><div class="label">Time to first token (s)</div><div class="value" id="ttft-p50">–</div>
      <div class="sub"><span id="ttft-p90">p90 –</span> · <span id="ttft-p99">p99 –</span></div></div>
    <div class="card"><div class="label">Time per output token (ms)</div><div class="value" id="tpot-p50">–</div>
      <div class="sub"><span id="tpot-p90">p90 –</span> · <span id="tpot-p99">p99 –</span></div></div>
    <div class="card"><div class="label">Step budget (tokens)</div><div class="value" id="budget">–</div>
      <div class="sub" id="throttle">–</div></div>
  </section>
  <section class="charts">
    <div class="chart"><div class="label"><span>Generated tokens/s</span><span id="window"></span></div>
      <svg id="chart-tok" viewBox="0 0 300 90" preserveAspectRatio="none"><polyline/></svg></div>
    <div class="chart"><div class="label"><span>Running (blue) and waiting (orange) requests</span></div>
      <svg id="chart-queue" viewBox="0 0 300 90" preserveAspectRatio="none"><polyline/><polyline class="second"/></svg>
    </div>
    <div class="chart"><div class="label"><span>KV cache blocks used</span></div>
      <svg id="chart-kv" viewBox="0 0 300 90" preserveAspectRatio="none"><polyline/></svg></div>
  </section>
  <table>
    <thead><tr><th>Device</th><th>Memory used</th><th>Utilisation</th><th>Temperature</th><th>Power</th>
      <th>Clock</th><th>Memory, last minutes</th></tr></thead>
    <tbody id="devices"></tbody>
  </table>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const fixed = (x, d) => (x === null || x === undefined) ? "–" : Number(x).toFixed(d);
function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; ++i; }
  return n.toFixed(i ? 1 : 0) + " " + units[i];
}
function set(id, text, value) {
  const el = $(id);
  el.textContent = text;
  if (value !== undefined) el.dataset.value = value;
}
// A polyline of `values` scaled into the 300 x 90 box (nulls skipped); the maximum is at least `floor`.
function plot(line, values, floor) {
  const ys = values.map((v) => (v === null ? 0 : v));
  const max = Math.max(floor, ...ys);
  const n = Math.max(ys.length - 1, 1);
  line.setAttribute("points", ys.map((y, i) => `${(i / n * 300).toFixed(1)},${(88 - y / max * 84).toFixed(1)}`)
    .join(" "));
}
function deviceRow(d, hist) {
  const tr = document.createElement("tr");
  tr.className = "device";
  tr.dataset.name = d.name;
  const used = d.memory_used_bytes, total = d.memory_total_bytes;
  const share = total ? Math.min(100, used / total * 100) : 0;
  tr.innerHTML = `<td><div class="name"></div><div class="desc"></div></td>
    <td><span class="mem"></span><div class="bar"><div style="width:${share.toFixed(1)}%"></div></div></td>
    <td class="util"></td><td class="temp"></td><td class="power"></td><td class="clock"></td>
    <td><svg viewBox="0 0 300 90" preserveAspectRatio="none" style="height:30px"><polyline/></svg></td>`;
  tr.querySelector(".name").textContent = d.name;
  tr.querySelector(".desc").textContent = d.description || "";
  const mem = tr.querySelector(".mem");
  mem.textContent = `${bytes(used)} / ${bytes(total)}`;
  mem.dataset.used = used;
  mem.dataset.total = total;
  tr.querySelector(".util").textContent = d.utilization === null ? "–" : `${fixed(d.utilization * 100, 0)} %`;
  tr.querySelector(".temp").textContent = d.temperature_celsius === null ? "–" : `${fixed(d.temperature_celsius, 0)} °C`;
  tr.querySelector(".power").textContent = d.power_watts === null ? "–" : `${fixed(d.power_watts, 0)} W`;
  tr.querySelector(".clock").textContent = d.clock_mhz === null ? "–" : `${fixed(d.clock_mhz, 0)} MHz`;
  if (hist) plot(tr.querySelector("polyline"), hist.memory_used_bytes, 1);
  return tr;
}
function show(s) {
  set("model", s.model);
  set("uptime", `up ${Math.floor(s.uptime_seconds / 60)} min`);
  const e = s.engine, t = s.throughput, l = s.latency;
  set("tok-s", fixed(t.generated_tokens_per_second, 1), t.generated_tokens_per_second);
  set("prompt-tok-s", `prompt ${fixed(t.prompt_tokens_per_second, 1)}/s`, t.prompt_tokens_per_second);
  set("running", `${e.running} running`, e.running);
  set("waiting", `${e.waiting} waiting`, e.waiting);
  set("kv-used", String(e.kv_blocks_used), e.kv_blocks_used);
  set("kv-total", `of ${e.kv_blocks_total} (${e.kv_dtype})`, e.kv_blocks_total);
  $("kv-bar").style.width = `${e.kv_blocks_total ? e.kv_blocks_used / e.kv_blocks_total * 100 : 0}%`;
  set("ttft-p50", l.ttft_seconds.count ? fixed(l.ttft_seconds.p50, 3) : "–", l.ttft_seconds.p50);
  set("ttft-p90", `p90 ${fixed(l.ttft_seconds.p90, 3)}`, l.ttft_seconds.p90);
  set("ttft-p99", `p99 ${fixed(l.ttft_seconds.p99, 3)}`, l.ttft_seconds.p99);
  set("tpot-p50", l.tpot_seconds.count ? fixed(l.tpot_seconds.p50 * 1000, 1) : "–", l.tpot_seconds.p50);
  set("tpot-p90", `p90 ${fixed(l.tpot_seconds.p90 * 1000, 1)}`, l.tpot_seconds.p90);
  set("tpot-p99", `p99 ${fixed(l.tpot_seconds.p99 * 1000, 1)}`, l.tpot_seconds.p99);
  set("budget", `${e.token_budget}`, e.token_budget);
  const throttle = $("throttle");
  throttle.textContent = e.throttled ? `throttled (cool: ${e.token_budget_max})` : "not throttled";
  throttle.className = e.throttled ? "sub throttled" : "sub";
  set("window", `last ${Math.round((s.history.t.at(-1) - s.history.t[0]) || 0)} s; percentiles over ` +
      `${Math.round(s.window_seconds / 60)} min`);
  const h = s.history;
  plot($("chart-tok").querySelector("polyline"), h.generated_tokens_per_second, 1);
  const lines = $("chart-queue").querySelectorAll("polyline");
  const top = Math.max(1, ...h.running, ...h.waiting);
  plot(lines[0], h.running, top);
  plot(lines[1], h.waiting, top);
  plot($("chart-kv").querySelector("polyline"), h.kv_blocks_used, Math.max(1, e.kv_blocks_total));
  $("devices").replaceChildren(...s.devices.map((d) => deviceRow(d, h.devices[d.name])));
}
async function poll() {
  try {
    // With --api-key the key the chat page keeps in this browser (its settings) opens /v1/status too.
    const key = localStorage.getItem("cai-api-key");
    const headers = key ? { Authorization: "Bearer " + key } : {};
    const res = await fetch("/v1/status", { cache: "no-store", headers });
    const body = await res.json();
    if (!res.ok) throw new Error(body.error?.message || `HTTP ${res.status}`);
    show(body);
    $("error").textContent = "";
    $("live").textContent = "live";
    $("live").className = "on";
  } catch (err) {
    $("live").textContent = "offline";
    $("live").className = "off";
    $("error").textContent = String(err.message || err);
  }
  setTimeout(poll, 1000);
}
poll();
</script>
</body>
</html>
)CAIPAGE";

}  // namespace

std::string_view dashboard_page_html() { return kDashboard; }

}  // namespace cai::server
