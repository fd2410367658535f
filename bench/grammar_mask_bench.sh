#!/usr/bin/env bash
# Structured output's cost against a decode step: makes a Qwen2-0.5B-shaped model (random weights, cai-mkmodel),
# times a decode step at batch 16 with `cai bench -b 16`, then runs cai-grammar-bench (Qwen2's real 151k-token
# tokenizer) with that step time, which prints the mask time per token per schema and its share of the step.
# Usage: bench/grammar_mask_bench.sh [build dir (default build)] [cai bench options, e.g. --device cuda:0]
set -euo pipefail
build=${1:-build}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
model=${CAI_BENCH_MODEL:-/tmp/cai-qwen2-0.5b-q8_0.gguf}
[ -f "$model" ] || "$build/cai-mkmodel" --arch qwen2 --preset qwen2-0.5b --dtype q8_0 -o "$model" >/dev/null
batch=16
json=$("$build/cai" bench -m "$model" -p 16 -n 16 -r 1 -b "$batch" --json "$@" 2>/dev/null | tail -1)
step_ms=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1000*$batch/d['tg_batch_tokens_per_s'])" "$json")
tokenizer="$build/testdata/tokenizer/qwen2"
if [ ! -f "$tokenizer/tokenizer.json" ]; then  # not unpacked by a test build: unpack it here
  tokenizer=$(mktemp -d)
  trap 'rm -rf "$tokenizer"' EXIT
  xz -dc "$root/tests/data/tokenizer/qwen2/tokenizer.json.xz" > "$tokenizer/tokenizer.json"
  cp "$root/tests/data/tokenizer/qwen2/tokenizer_config.json" "$tokenizer/"
fi
"$build/cai-grammar-bench" --tokenizer-dir "$tokenizer" --step-ms "$step_ms" --batch "$batch"
