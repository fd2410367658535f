#!/usr/bin/env bash
# Prepares .device-bundle/ for a GPU machine whose image lacks CAI's Debian build dependencies: the Release binaries
# device-check.sh runs (cai, cai-mkmodel, test_ops, test_cli, the backend plugins) plus the non-system shared
# libraries they link (fmt, spdlog, PCRE2, utf8proc, yaml-cpp, cpp-httplib). Carry the folder to the machine
# (it is git-ignored) and run `CAI_PREBUILT=.device-bundle bash scripts/device-check.sh` there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
dest=.device-bundle
rm -rf "$dest"
mkdir -p "$dest/lib"
for f in cai cai-mkmodel test_ops test_cli libcai-backend-cuda.so libcai-backend-simt.so; do
  [ -e "build/$f" ] || { echo "device-bundle: build/$f is missing (is nvcc installed?)" >&2; exit 1; }
  cp "build/$f" "$dest/"
done
# Test data paths are compiled in relative to the source tree, which travels with the working tree; the xz-packed
# test data unpacked at configure time (build/testdata) travels in the bundle.
cp -r build/testdata "$dest/"
for bin in "$dest"/cai "$dest"/test_ops "$dest"/test_cli; do
  ldd "$bin" | awk '/=> \// {print $3}' | grep -E 'libfmt|libspdlog|libpcre2|libutf8proc|libyaml-cpp|libcpp-httplib' |
    xargs -r -I{} cp -L {} "$dest/lib/"
done
grep -qx '/.device-bundle/' .git/info/exclude 2>/dev/null || echo '/.device-bundle/' >>.git/info/exclude
du -sh "$dest"
