#!/usr/bin/env bash
# Prints the Debian packages that hold the shared libraries the given binaries load (ldd), one a
# line, sorted; libraries no Debian package owns (the CUDA runtime, NCCL and the like, which come
# from the CUDA toolkit or NVIDIA's repository) are printed as "# not-debian <soname> <path>".
# tests/deploy/test_image.py compares the Debian part with runtime-packages.txt, so the image's
# runtime stage follows the daemon's real link line.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }

# soname -> path, over every binary.
declare -A libraries=()
for binary in "$@"; do
  while read -r soname arrow path _; do
    if [ "$arrow" = "=>" ] && [ -e "$path" ]; then libraries[$soname]=$path; fi
  done < <(ldd "$binary")
done

# dpkg knows a library under the path its package installed it to: /lib or /usr/lib (merged
# /usr makes both work), or the file a symlink points to. One query for every candidate.
candidates() {
  local path=$1
  echo "$path"; echo "${path/#\/usr\/lib\//\/lib\/}"; echo "${path/#\/lib\//\/usr\/lib\/}"
  realpath "$path"
}
declare -A owner=()
while IFS= read -r line; do
  owner[${line#*: }]=${line%%: *}
done < <(for path in "${libraries[@]}"; do candidates "$path"; done | sort -u \
           | xargs dpkg-query -S 2>/dev/null || true)

declare -A packages=()
foreign=()
for soname in "${!libraries[@]}"; do
  package=""
  while read -r candidate; do
    package=${owner[$candidate]:-}
    [ -n "$package" ] && break
  done < <(candidates "${libraries[$soname]}")
  if [ -n "$package" ]; then
    package=${package%%,*}       # a path shared by several packages: the first
    packages[${package%%:*}]=1   # drop an architecture qualifier (libfoo:amd64)
  else
    foreign+=("# not-debian $soname ${libraries[$soname]}")
  fi
done
printf '%s\n' "${!packages[@]}" | sort
if [ ${#foreign[@]} -gt 0 ]; then printf '%s\n' "${foreign[@]}" | sort; fi
