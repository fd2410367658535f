#!/usr/bin/env bash
# Prints the Debian packages that own the shared libraries the given binaries load (one per line, sorted), so that an
# image's runtime stage installs exactly what its build stage linked against, whatever the Debian release.
set -euo pipefail
for bin in "$@"; do
  ldd "$bin" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  # Merged /usr: dpkg may have recorded the file under /lib or /usr/lib, as linked or as resolved.
  for path in "$lib" "/usr$lib" "$(realpath "$lib")" "/usr$(realpath "$lib")"; do
    if owner=$(dpkg -S "$path" 2>/dev/null); then
      echo "${owner%%:*}"
      break
    fi
  done
done | sort -u
