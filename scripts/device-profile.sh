#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, after scripts/device-check.sh (same CAI_PREBUILT; its models in /tmp): where a
# decode step's time goes on cuda:0. Prints `cai bench`'s phase shares (fenced at each phase boundary) and, from
# Nsight Compute's kernel timer (`ncu`, one metric, clocks left alone), each kernel's GPU time per decode step against
# the step's wall time, so launch gaps and slow kernels show apart, and the same by launch shape. Usage:
# scripts/device-profile.sh [MODEL_NAME ...] (default qwen2-1.5b-q8_0). Output goes to $OUT when set, else
# /tmp/cai-device-profile.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
out=${OUT:-/tmp/cai-device-profile}
mkdir -p "$out"
bin=${CAI_PREBUILT:-build-device}
if [ -f "$bin" ]; then
  [ -d /tmp/cai-prebuilt/device-bundle ] || { mkdir -p /tmp/cai-prebuilt && tar -xJf "$bin" -C /tmp/cai-prebuilt; }
  bin=/tmp/cai-prebuilt/device-bundle
fi
bin=$(cd "$bin" && pwd)
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ncu=$(command -v ncu || find /opt/nvidia/nsight-compute /usr/local/cuda/bin -maxdepth 2 -name ncu -type f 2>/dev/null | head -1)
steps=4  # decode steps under the kernel timer (after a one-token prompt and the timed passes' warm-up)

for name in "${@:-qwen2-1.5b-q8_0}"; do
  model=/tmp/cai-device-$name.gguf
  echo "== $name"
  [ -f "$model" ] || { echo "  no model $model (run scripts/device-check.sh first)"; continue; }
  timeout 120 "$bin"/cai bench -m "$model" --device cuda:0 -p 1 -n 64 -r 2 --json >"$out/bench-$name.json" \
    2>"$out/bench-$name.log" || { tail -5 "$out/bench-$name.log"; continue; }
  python3 - "$out/bench-$name.json" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
shares = sorted(r["tg_time_share"].items(), key=lambda kv: -kv[1])
print(f"  tg {r['tg_tokens_per_s']:.1f} tok/s = {1e3 / r['tg_tokens_per_s']:.3f} ms a step; fenced phases: "
      + ", ".join(f"{k} {100 * v:.0f} %" for k, v in shares))
PY
  [ -n "$ncu" ] || { echo "  no ncu on this machine"; continue; }
  # -p 1 -n $steps -r 1: the prompt step, $steps timed steps, the fenced pass's $steps: all single-token steps.
  timeout 240 "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv \
    "$bin"/cai bench -m "$model" --device cuda:0 -p 1 -n $steps -r 1 >"$out/ncu-$name.csv" 2>"$out/ncu-$name.log" ||
    { tail -5 "$out/ncu-$name.log"; continue; }
  python3 - "$out/ncu-$name.csv" $((2 * steps + 1)) <<'PY'
import csv, collections, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, rows = rows[0], rows[1:]
k, unit, value = head.index("Kernel Name"), head.index("Metric Unit"), head.index("Metric Value")
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
steps = int(sys.argv[2])
def short(name):
    name = name.replace("(anonymous namespace)::", "").replace("void ", "")
    return name.split("(")[0].split("<")[0].split("::")[-1].strip()
# The run ends with the bandwidth probe (the device's own add op over 256 MiB buffers): leave its launches out.
while rows and short(rows[-1][k]).startswith("add"):
    rows.pop()
per = collections.defaultdict(lambda: [0, 0.0])
for r in rows:
    per[short(r[k])][0] += 1
    per[short(r[k])][1] += float(r[value].replace(",", "")) * scale[r[unit]]
total = sum(t for n, t in per.values())
print(f"  kernels: {len(rows)} launches, {total / steps:.1f} us of GPU time a step (over {steps} single-token steps)")
for name, (n, t) in sorted(per.items(), key=lambda kv: -kv[1][1])[:14]:
    print(f"    {t / steps:9.1f} us/step  {n / steps:6.1f} launches/step  {t / n:8.2f} us each  {name}")
# The same by launch shape (a GEMV's grid follows its weight's rows), for the largest eight.
grid = head.index("Grid Size")
shapes = collections.defaultdict(lambda: [0, 0.0])
for r in rows:
    shapes[(short(r[k]), r[grid])][0] += 1
    shapes[(short(r[k]), r[grid])][1] += float(r[value].replace(",", "")) * scale[r[unit]]
print("  by launch shape:")
for (name, g), (n, t) in sorted(shapes.items(), key=lambda kv: -kv[1][1])[:8]:
    print(f"    {t / steps:9.1f} us/step  {n / steps:6.1f} launches/step  {t / n:8.2f} us each  {name} grid {g}")
PY
done
