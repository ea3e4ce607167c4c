#!/usr/bin/env bash
# Checks that every tracked C++ and CUDA source is formatted as the committed .clang-format says
# (clang-format --dry-run --Werror), naming each file that is not; exits 1 if any. The tree is
# kept formatted with Debian 12's clang-format (scripts/install-deps.sh installs it): another
# version may format some constructs differently. Fix a file with `clang-format -i FILE`.
# scripts/test.sh runs it first, before the build, so a formatting slip fails in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-format: not a git checkout (the files checked are those git tracks)" >&2
  exit 1
fi
checked=0
bad=()
while IFS= read -r -d '' file; do
  [ -f "$file" ] || continue  # deleted in the working tree but not yet in the index
  checked=$((checked + 1))
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || bad+=("$file")
done < <(git ls-files -z '*.h' '*.cc' '*.cu' '*.cuh')
if [ ${#bad[@]} -gt 0 ]; then
  printf 'check-format: not formatted: %s\n' "${bad[@]}" >&2
  echo "check-format: ${#bad[@]} of $checked files differ from $(clang-format --version)" \
    "(clang-format -i FILE... formats them)" >&2
  exit 1
fi
echo "check-format: all $checked C++ and CUDA sources formatted"
