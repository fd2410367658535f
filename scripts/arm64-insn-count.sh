#!/usr/bin/env bash
# The speed proxy for ARM64 kernels where no ARM64 machine is at hand: the guest instructions CAI's ARM64 build
# executes per generated token under qemu-aarch64 (user mode), counted by a TCG plugin (bench/qemu/insn_count.c, built
# here for the host). Per token = (count of `cai bench -p 1 -n N+K` − count of `-n N`) / K, one thread, on random
# Qwen2-0.5B-shaped GGUF files (cai-mkmodel, fewer layers by default: emulation runs ~100× slower than the CPU), for
# each CPU kernel family (CAI_CPU_ISA) on one qemu CPU model. With CAI_INSN_PROMPT=P, per prompt token instead:
# (count of `-p P+K -n 1` − count of `-p P -n 1`) / K. Needs build-arm64 (cross-arm64.sh) and the host build's
# cai-mkmodel.
#   CAI_INSN_CPU=neoverse-n1   the qemu CPU model (neoverse-n1: NEON + dotprod; max: also i8mm and SVE)
#   CAI_INSN_FAMILIES="scalar neon dotprod"   the kernel families (add i8mm on max)
#   CAI_INSN_TYPES="q4_0 q8_0 q4_K"   CAI_INSN_LAYERS=1   CAI_INSN_TOKENS=2 (K)   CAI_INSN_PROMPT (unset: decode)
#   CAI_INSN_LLAMA_BENCH=path   also count llama.cpp's llama-bench built for aarch64 (outside this repository) on the
#                               same files: `-p 0 -n N -r 1 -t 1` (`-p P -n 0` for prompts), the same difference
set -euo pipefail
cd "$(dirname "$0")/.."
cpu=${CAI_INSN_CPU:-neoverse-n1}
types=${CAI_INSN_TYPES:-"q4_0 q8_0 q4_K"}
layers=${CAI_INSN_LAYERS:-1}
k=${CAI_INSN_TOKENS:-2}
families=${CAI_INSN_FAMILIES:-"scalar neon dotprod"}
prompt=${CAI_INSN_PROMPT:-}
[ -x build-arm64/cai ] || { echo "arm64-insn-count: build-arm64/cai is missing (scripts/cross-arm64.sh)" >&2; exit 1; }
[ -x build/cai-mkmodel ] || { echo "arm64-insn-count: build/cai-mkmodel is missing (the host build)" >&2; exit 1; }
out=build-arm64/insn-count
mkdir -p "$out"
gcc -shared -fPIC -O2 -o "$out/insn_count.so" bench/qemu/insn_count.c

# Instructions of one `cai bench` run ($1 CPU family, $2 model file) generating $3 tokens, or with a prompt of $3
# tokens where CAI_INSN_PROMPT is set.
count() {
  local shape=(-p 1 -n "$3")
  [ -z "$prompt" ] || shape=(-p "$3" -n 1)
  CAI_CPU_ISA=$1 qemu-aarch64 -cpu "$cpu" -plugin "$out/insn_count.so" build-arm64/cai bench -m "$2" "${shape[@]}" \
    -r 1 -t 1 2>&1 >/dev/null | sed -n 's/^instructions executed: //p'
}

# The same for llama-bench. Its warm-up run is in both counts; for prompts it processes the whole prompt again, so
# the difference holds the K tokens twice (llama_runs).
count_llama() {
  local shape=(-p 0 -n "$2")
  [ -z "$prompt" ] || shape=(-p "$2" -n 0)
  qemu-aarch64 -cpu "$cpu" -plugin "$out/insn_count.so" "$CAI_INSN_LLAMA_BENCH" -m "$1" "${shape[@]}" -r 1 -t 1 \
    2>&1 >/dev/null | sed -n 's/^instructions executed: //p'
}
base=${prompt:-1}
llama_runs=1
[ -z "$prompt" ] || llama_runs=2

first=${families%% *}
printf '%-6s %-11s %16s %10s\n' type family insns/token "vs_$first"
for t in $types; do
  model="$out/qwen2-0.5b-${layers}l-$t.gguf"
  [ -f "$model" ] || build/cai-mkmodel --preset qwen2-0.5b --layers "$layers" --dtype "$t" -o "$model" >/dev/null
  scalar=""  # the first family's count
  for family in $families; do
    a=$(count "$family" "$model" "$base")
    b=$(count "$family" "$model" $((base + k)))
    per=$(((b - a) / k))
    [ -n "$scalar" ] || scalar=$per
    printf '%-6s %-11s %16d %10s\n' "$t" "$family" "$per" "$(python3 -c "print(f'{$scalar / $per:.2f}x')")"
  done
  if [ -n "${CAI_INSN_LLAMA_BENCH:-}" ]; then
    a=$(count_llama "$model" "$base")
    b=$(count_llama "$model" $((base + k)))
    llama=$(((b - a) / (k * llama_runs)))
    printf '%-6s %-11s %16d %10s   (CAI %s / llama.cpp: %s)\n' "$t" llama.cpp "$llama" \
      "$(python3 -c "print(f'{$scalar / $llama:.2f}x')")" "$family" "$(python3 -c "print(f'{$per / $llama:.2f}')")"
  fi
done
