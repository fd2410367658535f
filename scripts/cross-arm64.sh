#!/usr/bin/env bash
# Cross-builds CAI for ARM64 into build-arm64/ and runs its kernel and op tests under qemu-aarch64 (user mode): the
# harness for the ARM64 CPU backend (docs/development.md). Installs what it needs from Debian when missing: the cross
# compiler, qemu-user, and the arm64 builds of CAI's libraries (multiarch). yaml-cpp's development package cannot sit
# beside the host's, so its arm64 files are unpacked into build-arm64/deps instead.
#   CAI_QEMU_CPUS="cortex-a72 max,sve256=on max"   the CPU models the tests run on, each in turn (cortex-a72: NEON
#       only, the neon kernels; max: dotprod, i8mm, BF16 and SVE, 512-bit vectors unless sve256=on: every kernel
#       family, the sve one at that vector length)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

libs=(libc6 libfmt-dev libspdlog-dev libgtest-dev libpcre2-dev libutf8proc-dev libboost-context-dev libcpp-httplib-dev
      libyaml-cpp0.7)  # libyaml-cpp0.7: the programs' runtime library
dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
need=()
command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || need+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
for l in "${libs[@]}"; do dpkg -s "$l:arm64" >/dev/null 2>&1 || need+=("$l:arm64"); done
if ((${#need[@]})); then
  echo "cross-arm64: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
deps="$PWD/build-arm64/deps"
if [ ! -f "$deps/usr/lib/aarch64-linux-gnu/cmake/yaml-cpp/yaml-cpp-config.cmake" ]; then
  mkdir -p "$deps"
  (cd "$deps" && apt-get download libyaml-cpp-dev:arm64 libyaml-cpp0.7:arm64 >/dev/null &&
    for deb in ./*.deb; do dpkg -x "$deb" .; done && rm -f ./*.deb)
fi

cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DCMAKE_PREFIX_PATH="$deps/usr" -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DCAI_GPU_PLUGINS=OFF \
  -DCAI_BENCH=OFF >/dev/null
cmake --build build-arm64 -j"$jobs" --target cai cai-backend-simt test_core test_ops
# The programs load the multiarch libc6:arm64; qemu's -L with the cross compiler's libc beside it hangs in
# pthread_create.
# Per CPU model: the core and op tests (the op tests run every kernel family the model has against the scalar
# kernels), every oracle in tests/data/oracle (Qwen2, Llama-3-scaled, DeepSeek-V3 BF16, FP8 and without q-LoRA: each
# prompt's logits and greedy tokens through the ARM64 cai against the references, F32 KV, 1e-4) and `cai doctor`'s op
# table and model checks (model_quant: Q8_0, Q4_0, Q4_K, Q6_K under --precision fast against their F32 twins).
oracles="qwen2_tiny llama3_scaled_tiny deepseek_v3_tiny deepseek_v3_tiny/fp8 deepseek_v3_tiny/q_lora_none
         deepseek_v3_tiny/mainline.gguf"
for cpu in ${CAI_QEMU_CPUS:-cortex-a72 max,sve256=on max}; do
  echo "cross-arm64: on qemu's $cpu" >&2
  run() { qemu-aarch64 -cpu "$cpu" "$@"; }
  run build-arm64/test_core --gtest_brief=1
  run build-arm64/test_ops --gtest_brief=1
  for o in $oracles; do
    model=tests/data/oracle/$o
    dir=$model
    [ -d "$dir" ] || dir=$(dirname "$model")  # a GGUF file beside its references
    n=$(python3 -c "import json; print(len(json.load(open('$dir/tokens.json'))['prompts']))")
    for ((i = 0; i < n; i++)); do
      ids=$(python3 -c "import json; print(','.join(map(str, json.load(open('$dir/tokens.json'))['prompts'][$i]['input_ids'])))")
      run build-arm64/cai eval -m "$model" --tokens "$ids" --greedy 8 --kv-dtype f32 --logits build-arm64/oracle.f32 \
        --json 2>/dev/null | python3 -c "
import json, struct, sys
got = json.loads(sys.stdin.read().strip().splitlines()[-1])
spec = json.load(open('$dir/tokens.json'))['prompts'][$i]
mine = open('build-arm64/oracle.f32', 'rb').read(); ref = open('$dir/' + spec['logits_file'], 'rb').read()
diff = max(abs(a - b) for a, b in zip(struct.unpack(f'{len(mine)//4}f', mine), struct.unpack(f'{len(ref)//4}f', ref)))
same = got['greedy'] == spec['greedy_next_tokens'][:len(got['greedy'])] and len(got['greedy']) == 8
ok = same and len(mine) == len(ref) and diff <= 1e-4
print(f'oracle on arm64 ($cpu): $o prompt $i: max |logit diff| {diff:.2e}, greedy tokens {\"equal\" if same else \"differ\"}')
sys.exit(0 if ok else 1)
"
    done
  done
  # The bandwidth step measures the emulator, so it only reports.
  run build-arm64/cai doctor --device cpu --in-process --json --memory-mib 16 2>/dev/null | python3 -c "
import json, sys
steps = json.load(sys.stdin)['devices'][0]['steps']
for s in steps: print(f'doctor on arm64 ($cpu): {s[\"step\"]}: {\"ok\" if s[\"ok\"] else \"FAILED\"}: {s[\"detail\"]}')
sys.exit(0 if all(s['ok'] for s in steps if s['step'] != 'bandwidth') else 1)
"
done
# Where the x86-64 build is here too (scripts/test.sh builds it first) and the CPU has AVX2: the exact path gives the
# same bits on both architectures, the NEON kernels the AVX2 ones' and the portable code the same (-ffp-contract=off
# on ARM64). Every oracle's first prompt, logits compared bit for bit.
if [ -x build/cai ] && grep -qw avx2 /proc/cpuinfo; then
  for o in $oracles; do
    model=tests/data/oracle/$o
    dir=$model
    [ -d "$dir" ] || dir=$(dirname "$model")
    ids=$(python3 -c "import json; print(','.join(map(str, json.load(open('$dir/tokens.json'))['prompts'][0]['input_ids'])))")
    for pair in "avx2 neon" "scalar scalar"; do
      set -- $pair
      args=(eval -m "$model" --tokens "$ids" --greedy 4 --kv-dtype f32 --precision exact --json)
      CAI_CPU_ISA=$1 build/cai "${args[@]}" --logits build-arm64/x86.f32 >/dev/null 2>&1
      CAI_CPU_ISA=$2 qemu-aarch64 -cpu max build-arm64/cai "${args[@]}" --logits build-arm64/arm.f32 >/dev/null 2>&1
      if ! cmp -s build-arm64/x86.f32 build-arm64/arm.f32; then
        echo "cross-arm64: $o: the logits of x86-64 $1 and ARM64 $2 differ" >&2
        exit 1
      fi
      echo "same bits on x86-64 ($1) and ARM64 ($2): $o"
    done
  done
fi
