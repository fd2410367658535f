#!/usr/bin/env bash
# Checks the C, C++ and CUDA-dialect sources against .clang-format (clang-format 14, Debian's): lists each file that
# differs and exits non-zero. `scripts/check-format.sh --fix` rewrites them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h' '*.cu' | grep -v '^tests/data/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/cai-format.$$; then
  grep -o '^[^:]*:[0-9]*' /tmp/cai-format.$$ | sort -u -t: -k1,1 | sed 's/^/not formatted: /' >&2
  rm -f /tmp/cai-format.$$
  echo "check-format: run scripts/check-format.sh --fix (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))" >&2
  exit 1
fi
rm -f /tmp/cai-format.$$
