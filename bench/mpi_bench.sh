#!/usr/bin/env bash
# mpi_bench.sh: one model over two MPI ranks against one process, on this machine's CPU (docs/multi-node.md). For each
# round it runs `cai bench --json -b 16` three ways back to back: one process with 2 threads, and `mpirun -np 2` with
# 1 thread per rank at --tp 2 and at --ep 2 (DeepSeek models). It keeps the best decode rate of each at batch 1 and
# the aggregate at batch 16, and prints them with the ranks' rate as a share of the single process's, the bytes each
# generated token moved between the ranks, and the share of decode time spent in transfers (waiting for the other
# rank included).
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bench/mpi_bench.sh [options] model.gguf
  --cai PATH       the cai binary (default: build/cai, with libcai-mpi.so beside it)
  --rounds N       interleaved rounds; the best of each layout is reported (default: 2)
  --layouts LIST   comma-separated rank layouts (default: "--tp 2,--ep 2"; --ep needs an MoE model)
  --pp N --tg N    prompt and generated tokens (default: 16 and 32)
USAGE
}
die() { echo "mpi_bench.sh: error: $*" >&2; exit 1; }

cai=build/cai rounds=2 layouts="--tp 2,--ep 2" pp=16 tg=32 model=""
while (($#)); do
  case "$1" in
    --cai) cai=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --pp) pp=$2; shift 2 ;;
    --tg) tg=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) model=$1; shift ;;
  esac
done
[ -n "$model" ] || { usage; exit 1; }
command -v mpirun >/dev/null || die "mpirun not found (openmpi-bin)"
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl_vader_single_copy_mechanism none -np 2)
bench=(bench -m "$model" --device cpu -p "$pp" -n "$tg" -r 2 -b 16 --json)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

IFS=, read -r -a layout_list <<<"$layouts"
for ((round = 1; round <= rounds; ++round)); do
  "$cai" "${bench[@]}" -t 2 2>/dev/null | tail -n 1 >>"$out/single.jsonl"
  for layout in "${layout_list[@]}"; do
    # shellcheck disable=SC2086  # the layout is two words
    "${mpi[@]}" "$cai" "${bench[@]}" -t 1 $layout 2>/dev/null | tail -n 1 >>"$out/${layout// /}.jsonl"
  done
done

python3 - "$out" "$model" "${layout_list[@]}" <<'PY'
import json, sys, os
out, model, layouts = sys.argv[1], sys.argv[2], sys.argv[3:]
def best(name):
    runs = [json.loads(l) for l in open(os.path.join(out, name + ".jsonl")) if l.strip()]
    if not runs:
        sys.exit(f"mpi_bench.sh: no result for {name}")
    top = max(runs, key=lambda r: r["tg_tokens_per_s"])
    top["tg_batch_tokens_per_s"] = max(r["tg_batch_tokens_per_s"] for r in runs)
    return top
single = best("single")
print(f"model {model}: tg tok/s at batch 1 / aggregate at batch 16 (best of the rounds)")
print("| layout | batch 1 | vs 1 process | batch 16 | vs 1 process | bytes moved per token | transfer share of tg |")
print("|---|---|---|---|---|---|---|")
print(f"| 1 process x 2 threads | {single['tg_tokens_per_s']:.2f} | 1.00 | {single['tg_batch_tokens_per_s']:.2f} "
      "| 1.00 | 0 | 0 |")
for layout in layouts:
    r = best(layout.replace(" ", ""))
    share = r["tg_time_share"].get("transfer", 0.0)
    print(f"| 2 ranks x 1 thread, {layout} | {r['tg_tokens_per_s']:.2f} "
          f"| {r['tg_tokens_per_s'] / single['tg_tokens_per_s']:.2f} "
          f"| {r['tg_batch_tokens_per_s']:.2f} | {r['tg_batch_tokens_per_s'] / single['tg_batch_tokens_per_s']:.2f} "
          f"| {r['tg_transfer_bytes_per_token']:,.0f} | {100 * share:.1f} % |")
PY
