#!/usr/bin/env bash
# Prints the Debian packages that hold the shared libraries the given binaries load (ldd), one a
# line, sorted; libraries no Debian package owns (the CUDA runtime, NCCL and the like, which come
# from the CUDA toolkit or NVIDIA's repository) are printed as "# not-debian <soname> <path>".
# scripts/check-deploy.sh compares the Debian part with runtime-packages.txt, so the image's
# runtime stage follows the daemon's real link line.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }

owner() {  # dpkg knows a library under the path its package installed it to: /lib or /usr/lib.
  local path=$1 candidate
  for candidate in "$path" "${path/#\/usr\/lib\//\/lib\/}" "${path/#\/lib\//\/usr\/lib\/}" \
      "$(realpath "$path")"; do
    dpkg-query -S "$candidate" 2>/dev/null | head -n1 | cut -d: -f1 && return 0
  done
  return 1
}

declare -A packages=() foreign=()
for binary in "$@"; do
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] && [ -e "$path" ] || continue
    if package=$(owner "$path") && [ -n "$package" ]; then
      packages[$package]=1
    else
      foreign[$soname]=$path
    fi
  done < <(ldd "$binary")
done
printf '%s\n' "${!packages[@]}" | sort
for soname in "${!foreign[@]}"; do echo "# not-debian $soname ${foreign[$soname]}"; done | sort
