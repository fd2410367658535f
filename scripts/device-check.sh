#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (e.g. the lent H200): build the cuda plugin, run the op table test and the oracles
# on cuda:0, `cai doctor --device cuda:0`, then `cai bench --device cuda:0` on random Qwen2-1.5B-shaped Q8_0 / Q4_K and a DeepSeek-V2-Lite-shaped
# Q4_0 model, printing tok/s and the share of the HBM roofline. Builds with nvcc + cmake when the machine has CAI's
# Debian build dependencies; otherwise run scripts/device-bundle.sh on a build machine, carry .device-bundle.tar.xz
# and set CAI_PREBUILT=.device-bundle.tar.xz (or a folder it was unpacked into). Output (logs, JSON) goes to $OUT
# when set, else /tmp/cai-device-check. The random models are written in the background while the tests run; every
# stage has its own time limit, and the whole check is meant to finish in under 6 minutes on an H200 host.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
out=${OUT:-/tmp/cai-device-check}
mkdir -p "$out"
jobs=$(nproc)
log() { echo "== $*" | tee -a "$out/summary.txt"; }

log "nvidia-smi"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv | tee -a "$out/summary.txt"

bin=build-device
if [ -n "${CAI_PREBUILT:-}" ]; then
  bin=$CAI_PREBUILT
  if [ -f "$bin" ]; then  # the archive scripts/device-bundle.sh packs
    mkdir -p /tmp/cai-prebuilt && tar -xJf "$bin" -C /tmp/cai-prebuilt && bin=/tmp/cai-prebuilt/device-bundle
  fi
  bin=$(cd "$bin" && pwd)
  export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CAI_TEST_SOURCE_DIR="$PWD" CAI_TEST_BINARY_DIR="$bin"
  log "prebuilt binaries from $CAI_PREBUILT"
else
  log "build (Release, cuda plugin for sm_80/sm_90 + PTX)"
  cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DCAI_BENCH=OFF >"$out/cmake.log" 2>&1 ||
    { tail -30 "$out/cmake.log"; echo "no build dependencies here: use scripts/device-bundle.sh + CAI_PREBUILT"; exit 1; }
  cmake --build build-device -j"$jobs" --target cai cai-mkmodel cai-backend-cuda cai-backend-simt test_ops test_cli \
    test_hal \
    >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
  bin=$PWD/build-device
fi
ls -l "$bin"/libcai-backend-cuda.so | tee -a "$out/summary.txt"
"$bin"/cai detect 2>&1 | tee "$out/detect.log" | tail -8

# The bench models, written while the tests run (cai-mkmodel uses every core; the tests mostly wait on the GPU).
models=(qwen2-1.5b-q8_0 "--arch qwen2 --preset qwen2-1.5b --dtype q8_0"
        qwen2-1.5b-q4_K "--arch qwen2 --preset qwen2-1.5b --dtype q4_K"
        v2-lite-q4_0 "--arch deepseek2 --preset deepseek-v2-lite --dtype q4_0")
mkmodel_pids=()
for ((i = 0; i < ${#models[@]}; i += 2)); do
  model="/tmp/cai-device-${models[i]}.gguf"
  [ -f "$model" ] && continue
  # shellcheck disable=SC2086  # the arguments are words on purpose
  timeout 240 "$bin"/cai-mkmodel ${models[i + 1]} --format gguf -o "$model.part" >"$out/mkmodel-${models[i]}.log" 2>&1 &&
    mv "$model.part" "$model" &
  mkmodel_pids+=($!)
done

log "op table test on every device (cpu, simt:0, cuda:0) vs ops/ref"
timeout 120 "$bin"/test_ops --gtest_filter='BackendOps.*' 2>&1 | tee "$out/ops.log" | tail -15
grep -E '^\[  (PASSED|FAILED) ' "$out/ops.log" >>"$out/summary.txt"

log "oracles on cuda:0 (qwen2, llama3-scaled, deepseek-v3 main/fp8/q_lora_none; 1e-3, same greedy tokens)"
CAI_TEST_DEVICE=cuda:0 timeout 120 "$bin"/test_cli --gtest_filter='*OracleEvalDevice*warp32' 2>&1 |
  tee "$out/oracles.log" | tail -12
grep -E '^\[  (PASSED|FAILED) ' "$out/oracles.log" >>"$out/summary.txt"

log "DeepSeek MTP on cuda:0: the module's logits against the reference, and speculative greedy = plain greedy"
CAI_TEST_DEVICE=cuda:0 timeout 120 "$bin"/test_cli --gtest_filter='MtpLogits.*:*SpecOracle*deepseek_v3_tiny_mtp' 2>&1 |
  tee "$out/mtp.log" | tail -8
grep -E '^\[  (PASSED|FAILED) ' "$out/mtp.log" >>"$out/summary.txt"

log "several devices: one-rank NCCL communicator; DeepSeek oracles with --device cuda:0 --moe-device cpu"
CAI_TEST_DEVICE=cuda:0 timeout 60 "$bin"/test_hal --gtest_filter='MultiDevice.NativeCollectiveOfOneRank' 2>&1 |
  tee "$out/collective.log" | tail -6
CAI_TEST_DEVICE=cuda:0 timeout 120 "$bin"/test_cli --gtest_filter='*OracleEvalLayout*moe_device_cpu_warp32' 2>&1 |
  tee "$out/moe-cpu.log" | tail -8
grep -hE '^\[  (PASSED|FAILED) |cuda:0: ' "$out/collective.log" "$out/moe-cpu.log" >>"$out/summary.txt"

log "cai doctor on cuda:0 (backend and versions, memory, ops, reference DeepSeek BF16/FP8, bandwidth vs profile)"
timeout 300 "$bin"/cai doctor --device cuda:0 --step-timeout 120 2>"$out/doctor.log" | tee -a "$out/summary.txt"

bench() {  # name, extra cai bench arguments...
  local name=$1; shift
  local model="/tmp/cai-device-$name.gguf"
  log "bench $name $*"
  [ -f "$model" ] || { echo "  no model (cai-mkmodel failed or timed out: $out/mkmodel-$name.log)"; return; }
  timeout 120 "$bin"/cai bench -m "$model" --device cuda:0 -p 128 -n 64 -r 3 "$@" --json >"$out/bench-$name.json" \
    2>"$out/bench-$name.log" || tail -5 "$out/bench-$name.log"
  python3 - "$out/bench-$name.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
try:
    r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except (IndexError, ValueError):
    sys.exit("  no result")
print(f"  pp {r.get('pp_tokens_per_s', 0):.1f} tok/s  tg {r.get('tg_tokens_per_s', 0):.1f} tok/s  "
      f"roofline {r.get('tg_roofline_tokens_per_s', 0):.1f} tok/s at {r.get('mem_read_gbps', 0):.0f} GB/s "
      f"= {100 * r.get('tg_roofline_ratio', 0):.1f} %"
      + (f"  batch {r['batch']}: {r['tg_batch_tokens_per_s']:.1f} tok/s ({r['batch_speedup']:.2f}x)" if 'batch' in r else "")
      + "\n  decode time: " + ", ".join(f"{k} {100 * v:.0f} %" for k, v in r.get("tg_time_share", {}).items()))
PY
}
wait "${mkmodel_pids[@]}"
bench qwen2-1.5b-q8_0 -b 16
bench qwen2-1.5b-q4_K
bench v2-lite-q4_0
log "done; details in $out"
