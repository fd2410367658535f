#!/usr/bin/env bash
# Installs CAI's build dependencies (Debian packages) when missing, builds it into build/ (Release), then checks
# each device end to end with `cai doctor`.
# CAI_SETUP_PACKAGES_ONLY=1: the packages only (deploy/Dockerfile builds its own way).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config git python3 xz-utils clang libclang-rt-14-dev
  clang-format  # scripts/check-format.sh
  libpcre2-dev libutf8proc-dev nlohmann-json3-dev libfmt-dev libspdlog-dev libcli11-dev libyaml-cpp-dev
  libcpp-httplib-dev libgtest-dev libgmock-dev libbenchmark-dev
  libboost-context-dev  # fibers of the simt GPU emulator
  tmux                  # tests/cli/chat_cli_test drives `cai chat` in a terminal
  libopenmpi-dev openmpi-bin  # libcai-mpi.so: `mpirun -np N cai ...` across processes and machines
  hipcc)                # builds libcai-backend-hip.so (AMD / Hygon DCU); CUDA's nvcc is used when installed
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[ "${CAI_SETUP_PACKAGES_ONLY:-0}" = 1 ] && exit 0

jobs=$(nproc)
# A unity build: each folder's files compile in batches of 8, so the shared headers are parsed once per batch (about
# half the compile time of a fresh build; see CMakeLists.txt).
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build -j"$jobs"
# The health check of every device (docs/cli.md#cai-doctor): a failing step is reported, and serving on the devices
# that pass still works, so it does not stop the set-up.
./build/cai doctor 2>/dev/null || echo "setup: cai doctor found a problem above; the failing step names the piece" >&2
