#!/usr/bin/env bash
# compare.sh: CAI against a peer engine's llama-bench (llama.cpp, ik_llama.cpp) on the same GGUF files.
# For every model, thread count and round it measures the memory read bandwidth with cai-membw, then runs
# `cai bench --json` and the peer's `llama-bench -o json` back to back with the same pp / tg / threads (the order
# alternates between rounds, so a drift in machine load hits both alike). It keeps the best pp and tg of all rounds
# and reps for each engine and prints one table: tok/s, the CAI/peer ratios, and tg as % of the bandwidth roofline,
# where roofline tok/s = read bandwidth at that thread count (bytes/s) / weight bytes read per generated token.
# Bytes per token come from `cai bench` (weight_bytes_per_token); the GGUF file size (an upper bound) if it lacks them.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bench/compare.sh --peer PATH/llama-bench [options] model.gguf...
  --peer PATH              the peer's llama-bench binary (required)
  --cai PATH               the cai binary (default: build/cai); cai-membw is taken from the same directory
  --threads LIST           comma-separated thread counts (default: 1,<all cores>)
  --rounds N               interleaved rounds; the best of them is reported (default: 3)
  --reps N                 repetitions inside each run (-r of both benches; the best one counts), default 2:
                           llama-bench warms up before it measures, cai bench does not, so its first rep is cold
  --pp N                   prompt tokens (default: 512)
  --tg N                   generated tokens (default: 128)
  --rtr                    also run the peer with -rtr 1 (ik_llama.cpp run-time repack); the best of both counts
  --extra-cai-args "..."   more `cai bench` options; --precision fast and --device cpu are added unless these
                           set --precision / --device (CAI's KV cache is f32 on the CPU; llama-bench's f16)
  --extra-peer-args "..."  more llama-bench options
  -h, --help               this text
Example: bench/compare.sh --peer ../ik_llama.cpp/build/bin/llama-bench --rtr --threads 1,8 model.gguf
EOF
}
die() { echo "compare.sh: error: $*" >&2; exit 1; }
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

peer="" cai="build/cai" threads="1,$(nproc)" rounds=3 reps=2 pp=512 tg=128 rtr=0 extra_cai="" extra_peer=""
if [ "$(nproc)" = 1 ]; then threads=1; fi
models=()
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --rtr) rtr=1; shift ;;
    --peer|--cai|--threads|--rounds|--reps|--pp|--tg|--extra-cai-args|--extra-peer-args)
      [ $# -ge 2 ] || die "$1 needs a value"
      case $1 in
        --peer) peer=$2 ;; --cai) cai=$2 ;; --threads) threads=$2 ;; --rounds) rounds=$2 ;; --reps) reps=$2 ;;
        --pp) pp=$2 ;; --tg) tg=$2 ;; --extra-cai-args) extra_cai=$2 ;; --extra-peer-args) extra_peer=$2 ;;
      esac
      shift 2 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) models+=("$1"); shift ;;
  esac
done

[ -n "$peer" ] || die "--peer PATH/llama-bench is required (see --help)"
[ -f "$peer" ] || die "peer binary not found: $peer"
[ -x "$peer" ] || die "peer binary is not executable: $peer"
[ -x "$cai" ] || die "cai binary not found or not executable: $cai (build it, or pass --cai)"
[ ${#models[@]} -gt 0 ] || die "no model given (see --help)"
for m in "${models[@]}"; do [ -r "$m" ] || die "model not found or unreadable: $m"; done
for v in "$rounds" "$reps" "$pp" "$tg"; do is_count "$v" || die "not a positive count: '$v'"; done
[[ $threads =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--threads wants a list like 1,8, not '$threads'"
command -v jq >/dev/null || die "jq is needed to read the JSON outputs (apt-get install jq)"
membw="$(dirname "$cai")/cai-membw"
[ -x "$membw" ] || { echo "compare.sh: note: $membw not found; using the bandwidth cai bench measures" >&2; membw=""; }
IFS=, read -r -a thread_list <<<"$threads"
read -r -a cai_args <<<"$extra_cai"
read -r -a peer_args <<<"$extra_peer"
[[ " $extra_cai " == *" --precision"* ]] || cai_args=(--precision fast "${cai_args[@]}")
[[ " $extra_cai " == *" --device"* ]] || cai_args=(--device cpu "${cai_args[@]}")  # the peers here are CPU builds

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run WHAT CMD...: the command's stdout goes to $tmp/out; on failure print its stderr tail and stop.
run() {
  local what=$1 rc=0; shift
  "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ $rc != 0 ]; then
    echo "compare.sh: error: $what failed (exit status $rc): $*" >&2
    tail -n 15 "$tmp/err" >&2
    exit 1
  fi
}
# json_num WHAT JQ_FILTER FILE: one number out of a JSON file, or stop with an error.
json_num() {
  local v
  v=$(jq -r "$2" "$3" 2>/dev/null) || v=""
  [[ $v =~ ^[0-9.eE+-]+$ ]] || { head -c 2000 "$3" >&2; die "$1: its output above has no number for $2"; }
  echo "$v"
}
max() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { print (a + 0 > b + 0) ? a : b }'; }
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > b + 0) }'; }

declare -A c_pp c_tg p_pp p_tg p_rtr bw bpt bpt_src

cai_round() {  # cai_round MODEL THREADS KEY
  run "cai bench ($1, $2 threads)" "$cai" bench -m "$1" -t "$2" -p "$pp" -n "$tg" -r "$reps" --json "${cai_args[@]}"
  grep '^{' "$tmp/out" | tail -n 1 >"$tmp/cai.json" || true
  c_pp[$3]=$(max "${c_pp[$3]:-0}" "$(json_num "cai bench" .pp_tokens_per_s "$tmp/cai.json")")
  c_tg[$3]=$(max "${c_tg[$3]:-0}" "$(json_num "cai bench" .tg_tokens_per_s "$tmp/cai.json")")
  local b
  b=$(jq -r '.weight_bytes_per_token // 0' "$tmp/cai.json")
  if [[ $b =~ ^[0-9]+$ ]] && [ "$b" -gt 0 ]; then
    bpt[$1]=$b bpt_src[$1]="weight_bytes_per_token from cai bench"
  else
    bpt[$1]=$(stat -c %s "$1") bpt_src[$1]="GGUF file size (upper bound: also counts the unread embedding rows)"
  fi
  [ -n "$membw" ] || bw[$3]=$(max "${bw[$3]:-0}" "$(json_num "cai bench" .mem_read_gbps "$tmp/cai.json")")
}

peer_round() {  # peer_round MODEL THREADS KEY
  local r pp_ts tg_ts
  for r in 0 $([ $rtr = 1 ] && echo 1); do
    local flags=()
    [ "$r" = 1 ] && flags=(-rtr 1)
    run "peer llama-bench ($1, $2 threads${flags:+, -rtr 1})" \
      "$peer" -m "$1" -t "$2" -p "$pp" -n "$tg" -r "$reps" -o json "${flags[@]}" "${peer_args[@]}"
    pp_ts=$(json_num "llama-bench" '[.[] | select(.n_gen == 0) | (.samples_ts // [.avg_ts])[]] | max' "$tmp/out")
    tg_ts=$(json_num "llama-bench" '[.[] | select(.n_prompt == 0) | (.samples_ts // [.avg_ts])[]] | max' "$tmp/out")
    if gt "$pp_ts" "${p_pp[$3]:-0}"; then p_pp[$3]=$pp_ts p_rtr[$3,pp]=$r; fi
    if gt "$tg_ts" "${p_tg[$3]:-0}"; then p_tg[$3]=$tg_ts p_rtr[$3,tg]=$r; fi
  done
}

for m in "${models[@]}"; do
  for t in "${thread_list[@]}"; do
    key="$m|$t"
    for ((round = 1; round <= rounds; round++)); do
      echo "compare.sh: $(basename "$m"), $t threads, round $round/$rounds" >&2
      if [ -n "$membw" ]; then
        run "cai-membw ($t threads)" "$membw" --threads "$t" --json
        field=$([ "$t" = 1 ] && echo .read_gbps_1t || echo .read_gbps)
        bw[$key]=$(max "${bw[$key]:-0}" "$(json_num cai-membw "$field" "$tmp/out")")
      fi
      if ((round % 2)); then cai_round "$m" "$t" "$key"; peer_round "$m" "$t" "$key"
      else peer_round "$m" "$t" "$key"; cai_round "$m" "$t" "$key"; fi
    done
  done
done

echo
echo "pp$pp / tg$tg tok/s, best of $rounds round(s) x $reps rep(s); pp_x, tg_x = CAI/peer;" \
  "roof = tg roofline tok/s; %roof = tg / roof"
if [ $rtr = 1 ]; then echo "peer: best of plain and -rtr 1; the rtr column says which results came from -rtr 1"; fi
fmt="%-24s %3s %9s %9s %6s %8s %8s %6s %8s %7s %7s %6s %5s\n"
# shellcheck disable=SC2059  # the format is the fixed table layout above
printf "$fmt" model thr cai_pp peer_pp pp_x cai_tg peer_tg tg_x roof cai%roof peer%roof GB/s rtr
for m in "${models[@]}"; do
  for t in "${thread_list[@]}"; do
    key="$m|$t"
    case $rtr${p_rtr[$key,pp]:-0}${p_rtr[$key,tg]:-0} in
      111) rtr_col="pp+tg" ;; 110) rtr_col=pp ;; 101) rtr_col=tg ;; 100) rtr_col=none ;; *) rtr_col=- ;;
    esac
    awk -v f="$fmt" -v m="$(basename "$m")" -v t="$t" -v cp="${c_pp[$key]}" -v pq="${p_pp[$key]}" \
      -v ct="${c_tg[$key]}" -v pt="${p_tg[$key]}" -v bw="${bw[$key]}" -v b="${bpt[$m]}" -v r="$rtr_col" '
      function ratio(a, c) { return c > 0 ? sprintf("%.2f", a / c) : "n/a" }
      BEGIN { roof = b > 0 ? bw * 1e9 / b : 0
        printf f, substr(m, 1, 24), t, sprintf("%.1f", cp), sprintf("%.1f", pq), ratio(cp, pq), sprintf("%.2f", ct),
          sprintf("%.2f", pt), ratio(ct, pt), sprintf("%.1f", roof), sprintf("%.0f%%", roof > 0 ? 100 * ct / roof : 0),
          sprintf("%.0f%%", roof > 0 ? 100 * pt / roof : 0), sprintf("%.1f", bw), r }'
  done
done
echo
if [ -n "$membw" ]; then echo "bandwidth (GB/s): cai-membw, the best of the rounds, at each row's thread count"
else echo "bandwidth (GB/s): cai bench's own measurement at each row's thread count"; fi
for m in "${models[@]}"; do
  awk -v m="$(basename "$m")" -v b="${bpt[$m]}" -v s="${bpt_src[$m]}" \
    'BEGIN { printf "bytes/token %s: %.1f MiB (%s)\n", m, b / 1048576, s }'
done
