#!/usr/bin/env bash
# Long libFuzzer runs: scripts/fuzz-long.sh [MINUTES] [TARGET...] fuzzes each target (default: every
# tests/fuzz/fuzz_*.cpp; `gguf` and `fuzz_gguf` name the same one) for MINUTES (default 10) on a corpus kept between
# runs, and prints one line per target. Exits nonzero if any target crashed; the crash inputs are named in the output.
#   CAI_FUZZ_BUILD_DIR   the clang ASan + UBSan build, configured and built as in scripts/test.sh (default build-asan)
#   CAI_FUZZ_CORPUS_DIR  corpus root: <root>/<name> grows from tests/fuzz/seeds/<name>; crash inputs go to
#                        <root>/crashes, the libFuzzer logs of the last run to <root>/logs/<name> (default fuzz-corpus)
#   CAI_FUZZ_JOBS        parallel fuzzing processes per target, each for the whole MINUTES (default 1)
#   CAI_FUZZ_BUILD_JOBS  compile jobs (default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
shift $(($# > 0 ? 1 : 0))
[[ "$minutes" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [MINUTES (a positive integer)] [TARGET...]" >&2; exit 2; }
build=${CAI_FUZZ_BUILD_DIR:-build-asan}
root=$(mkdir -p "${CAI_FUZZ_CORPUS_DIR:-fuzz-corpus}" && cd "${CAI_FUZZ_CORPUS_DIR:-fuzz-corpus}" && pwd)
jobs=${CAI_FUZZ_JOBS:-1}

targets=()
if (($#)); then
  for t in "$@"; do targets+=("fuzz_${t#fuzz_}"); done
else
  for src in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
fi
for t in "${targets[@]}"; do
  [ -f "tests/fuzz/$t.cpp" ] || { echo "fuzz-long: no target $t (tests/fuzz/$t.cpp)" >&2; exit 2; }
done

source scripts/sanitizer-flags.sh
CC=clang CXX=clang++ cmake -S . -B "$build" "${sanitizer_cmake_flags[@]}" -DCAI_SANITIZE=ON -DCAI_FUZZ=ON >/dev/null
cmake --build "$build" -j"${CAI_FUZZ_BUILD_JOBS:-$(nproc)}" --target "${targets[@]}" >/dev/null
bin_dir=$(cd "$build" && pwd)

# Sums one final-stats field over the logs of a run (one log per job).
sum_stat() { cat "$2"/*.log | grep -o "stat::$1: *[0-9]*" | awk '{ s += $2 } END { print s + 0 }'; }

n_crashed=0
mkdir -p "$root/crashes"
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  corpus="$root/$name"
  logs="$root/logs/$name"
  mkdir -p "$corpus"
  rm -rf "$logs" && mkdir -p "$logs"
  n_before=$(find "$corpus" -type f | wc -l)
  seeds=()
  [ -d "tests/fuzz/seeds/$name" ] && seeds=("$PWD/tests/fuzz/seeds/$name")  # read, never written to
  marker="$logs/.start"
  touch "$marker"
  # libFuzzer writes each job's output to fuzz-<job>.log in its working directory.
  rc=0
  (cd "$logs" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$bin_dir/$t" -jobs="$jobs" \
      -workers="$jobs" -max_total_time=$((minutes * 60)) -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$root/crashes/$name-" "$corpus" "${seeds[@]}" >driver.out 2>&1) || rc=$?
  mapfile -t artifacts < <(find "$root/crashes" -name "$name-*" -newer "$marker" -type f)
  n_after=$(find "$corpus" -type f | wc -l)
  printf '%-20s execs %11s  exec/s %7s  corpus %6s (+%s)  crashes %s\n' "$name" \
    "$(sum_stat number_of_executed_units "$logs")" "$(sum_stat average_exec_per_sec "$logs")" "$n_after" \
    "$((n_after - n_before))" "${#artifacts[@]}"
  if ((rc != 0 || ${#artifacts[@]} > 0)); then
    n_crashed=$((n_crashed + 1))
    grep -h -A12 -E '^==[0-9]+==ERROR|runtime error:|^SUMMARY|deadly signal|Test unit written' "$logs"/*.log |
      head -n 60 >&2 || true
    for a in "${artifacts[@]}"; do echo "  crash input: $a" >&2; done
    echo "  logs: $logs (exit status $rc)" >&2
  fi
done
((n_crashed == 0)) || { echo "fuzz-long: $n_crashed of ${#targets[@]} targets crashed" >&2; exit 1; }
echo "fuzz-long: ${#targets[@]} targets ran ${minutes} min each without a crash"
