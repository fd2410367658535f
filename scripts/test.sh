#!/usr/bin/env bash
# The whole test suite: Release build + ctest, the same tests under clang ASan+UBSan, then each libFuzzer target briefly,
# then the ARM64 build's kernel and oracle tests under emulation.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
fuzz_seconds=${CAI_FUZZ_SECONDS:-6}
# Each phase's header carries the seconds since the start, so CI logs show where the time goes.
phase() { echo "== $* [${SECONDS}s]"; }

phase "set-up and Release build"
bash scripts/setup.sh
phase "formatting (.clang-format)"
bash scripts/check-format.sh
phase "tests (Release)"
# The MPI tests (tests/dist, tests/e2e/mpi_faults) need Open MPI, which setup.sh installs: missing, they fail here.
if ! command -v mpirun >/dev/null 2>&1 || [ ! -f build/libcai-mpi.so ]; then
  echo "test: mpirun or build/libcai-mpi.so is missing (libopenmpi-dev and openmpi-bin: scripts/setup.sh)" >&2
  exit 1
fi
ctest --test-dir build --output-on-failure -j"$jobs"

phase "out-of-tree plugin (installed SDK, clang++) against the engine's loader"
sdk=$(mktemp -d)
cmake --install build --prefix "$sdk/prefix" >/dev/null
CXX=clang++ cmake -S tests/hal/plugin -B "$sdk/echo" -DCMAKE_PREFIX_PATH="$sdk/prefix" >/dev/null
cmake --build "$sdk/echo" -j"$jobs" >/dev/null
CAI_ECHO_PLUGIN="$sdk/echo/test-plugins/libcai-backend-echo.so" ./build/test_hal --gtest_filter='PluginRegistry.*' --gtest_brief=1
rm -rf "$sdk"

phase "end-to-end (official openai client, chat page in headless Chromium)"
# Install only what is missing, and never Debian's npm next to a Node.js that brings its own (they conflict).
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if ((${#need[@]})); then
  echo "test: installing ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
npm ci --no-audit --no-fund --loglevel=error
# The chat page's and the dashboard's screenshots are kept in build/artifacts/.
mkdir -p build/artifacts
CAI_SCREENSHOT_DIR="$PWD/build/artifacts" CAI_BIN="$PWD/build/cai" npm run --silent test:e2e
# The OpenAI client's tests again with the model over two simt devices (tensor parallel; docs/multi-device.md), and over
# two MPI ranks on the CPU (docs/multi-node.md).
CAI_SIMT_DEVICES=2 CAI_E2E_SERVER_ARGS="--device simt:0,simt:1 --tp 2" CAI_BIN="$PWD/build/cai" \
  node --test --test-concurrency=1 tests/e2e/openai_api.test.mjs
CAI_E2E_LAUNCHER="mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl_vader_single_copy_mechanism none \
  -np 2" CAI_E2E_SERVER_ARGS="--device cpu -t 1 --tp 2" CAI_BIN="$PWD/build/cai" \
  node --test --test-concurrency=1 tests/e2e/openai_api.test.mjs
phase "soak (64 clients, 60 s: good, cancelled and bad requests; status, /health latency, RSS, KV blocks)"
CAI_BIN="$PWD/build/cai" npm run --silent bench:soak -- --seconds 60

phase "tests (clang, ASan + UBSan) and fuzz targets"
# One sanitizer build serves both: the tests run under ASan + UBSan, the libFuzzer targets link the same objects.
# The cuda/hip plugins are built once, in the Release build; the simt plugin stays in this one.
source scripts/sanitizer-flags.sh
CC=clang CXX=clang++ cmake -S . -B build-asan "${sanitizer_cmake_flags[@]}" -DCAI_SANITIZE=ON -DCAI_FUZZ=ON >/dev/null
cmake --build build-asan -j"$jobs"
# Under ASan the emulated GPU runs ~4× slower: the simt oracles run at warp 64 only, the layouts only as those that
# reach every path of the others (2 x 2 simt devices: stage moves and all-reduces between device memories; cpu beside
# simt at --tp 2: the in-place host side; --ep; --moe-device cpu), and the kernels in one thread order (the Release
# suite above covers the rest). The engine's concurrency and batching tests run here on the CPU; their simt twins
# (125 of the 840 test-seconds here) add no code ASan would not already see through the simt oracles and kernel tests,
# and run in the Release suite. The large-prompt test bounds peak RSS, which ASan's redzones and quarantine inflate; it
# runs in the Release suite, as does the plan-against-bench test (it times a 0.5B model four times). The MPI jobs run
# below.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j"$jobs" \
  -E 'OracleEvalDevice.*warp32|OracleEvalLayout.*(warp32|device_simt_0_simt_1___(pp|tp)_2_warp64|device_cpu_simt_0___pp_2_warp64|device_simt_0_2.*warp64)|CudaKernelsInReverseThreadOrder|LargePromptCostsASmallMultipleOfItsBytes|(EngineOn|SequenceBatchOn)\.(ConcurrentRequestsMatchTheirSoloRuns|BatchedStepsEqualSoloRuns)/simt|OracleEvalMpi|Mpi\.|Collectives\.|PlanCli\.SavedProfilePredictsTheBenchmarkedSpeeds'
# MPI jobs under ASan: three oracle cases that reach every cross-process path (an all-reduce between CPU ranks, stage
# moves between simt ranks' device memories, expert parallel), and every collective over three ranks. Each job spends ~7 s in Open MPI's start-up under ASan,
# so the Release suite runs the rest. Without leak checks: Open MPI's allocations still live at exit come from
# components it has unloaded by then, which LeakSanitizer can neither attribute nor suppress.
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j"$jobs" \
  -R 'OracleEvalMpi.*deepseek_v3_tiny_np2___device_(cpu__t_1___(tp|ep)_2|simt___pp_2) |Collectives\.'

phase "tests (clang, ThreadSanitizer): runtime and server"
# TSan excludes ASan, so a third build, of the two test binaries whose code runs on several threads (engine thread,
# host thread pool, HTTP workers). The simt device is left out: its GPU threads are Boost.Context fibers, which TSan
# cannot follow without fiber annotations. The large-prompt test measures time and peak RSS, which TSan inflates.
CC=clang CXX=clang++ cmake -S . -B build-tsan "${sanitizer_cmake_flags[@]}" -DCAI_TSAN=ON >/dev/null
cmake --build build-tsan -j"$jobs" --target test_runtime test_server
tsan="halt_on_error=1 second_deadlock_stack=1"
TSAN_OPTIONS=$tsan ./build-tsan/test_runtime --gtest_brief=1 --gtest_filter='-*/simt:*KvOffload*'
TSAN_OPTIONS=$tsan ./build-tsan/test_server --gtest_brief=1 \
  --gtest_filter='-ServerTest.LargePromptCostsASmallMultipleOfItsBytes'

phase "fuzzing (${fuzz_seconds}s per target)"
n_fuzz=0
for src in tests/fuzz/fuzz_*.cpp; do
  name=$(basename "$src" .cpp)
  corpus=$(mktemp -d)
  seeds="tests/fuzz/seeds/${name#fuzz_}"
  [ -d "$seeds" ] && cp -r "$seeds"/. "$corpus"/
  log=$(mktemp)
  if ! ./build-asan/"$name" -max_total_time="$fuzz_seconds" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$corpus/" "$corpus" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz: $name crashed" >&2
    exit 1
  fi
  echo "-- $name: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | cut -d' ' -f2) inputs, no crash"
  rm -f "$log"
  n_fuzz=$((n_fuzz + 1))
  rm -rf "$corpus"
done
echo "fuzz: $n_fuzz targets ran without a crash"
phase "ARM64: cross-built, under qemu-aarch64 (a NEON-only CPU model, and SVE ones at 256 and 512 bits)"
# The core and op tests (each CPU kernel family against the scalar kernels), the DeepSeek oracle and cai doctor's
# op and model checks; the rest of the suite is architecture-neutral C++ that the x86-64 runs above cover.
bash scripts/cross-arm64.sh
phase "container image (deploy/Dockerfile, the base stage)"
# Only where a container builder and the Debian base image are already here: nothing is pulled from a registry. The cuda
# and hip stages need their toolchains' packages and are built by hand (docs/deploy.md).
builder=""
for b in docker podman; do
  if command -v "$b" >/dev/null 2>&1 && "$b" image inspect debian:bookworm >/dev/null 2>&1; then builder=$b; break; fi
done
if [ -z "$builder" ]; then
  echo "image: skipped (no docker or podman with debian:bookworm on this machine)"
else
  "$builder" build --pull=never -f deploy/Dockerfile --target base -t cai:base .
fi
phase "all tests passed"
