#!/usr/bin/env bash
# Prepares .device-bundle.tar.xz for a GPU machine whose image lacks CAI's Debian build dependencies: the Release
# binaries device-check.sh runs (cai, cai-mkmodel, test_ops, test_cli, test_hal, the backend plugins), stripped, plus
# every shared library they link beyond glibc and the C++ runtime (fmt, spdlog, PCRE2, utf8proc, yaml-cpp, cpp-httplib,
# Boost.Context, brotli, OpenSSL, zlib). Packed, because the working tree (tests/data included) and the carried files
# travel together under one size limit. Carry the archive to the machine (it is git-ignored) and run
# `CAI_PREBUILT=.device-bundle.tar.xz bash scripts/device-check.sh` there.
# CAI_BUILD_DIR: a Release build to take the binaries from (default: build/, built by scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CAI_BUILD_DIR:-build}
[ -n "${CAI_BUILD_DIR:-}" ] || bash scripts/setup.sh >/dev/null
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dest=$stage/device-bundle
mkdir -p "$dest/lib"
for f in cai cai-mkmodel test_ops test_cli test_hal libcai-backend-cuda.so libcai-backend-simt.so; do
  [ -e "$build/$f" ] || { echo "device-bundle: $build/$f is missing (is nvcc installed?)" >&2; exit 1; }
  strip --strip-unneeded -o "$dest/$f" "$build/$f"
done
# The test data the device check reads (tests/data/oracle) is not xz-packed, so it travels with the source tree; the
# unpacked tokenizer files in $build/testdata are not needed there.
for bin in "$dest"/cai "$dest"/cai-mkmodel "$dest"/test_ops "$dest"/test_cli "$dest"/test_hal "$dest"/*.so; do
  ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so' |
  xargs -r -I{} cp -L {} "$dest/lib/"
tar -cJf .device-bundle.tar.xz -C "$stage" device-bundle
grep -qx '/.device-bundle.tar.xz' .git/info/exclude 2>/dev/null || echo '/.device-bundle.tar.xz' >>.git/info/exclude
ls -l .device-bundle.tar.xz
