#!/usr/bin/env bash
# Checks that each layer of the daemon includes only itself and the layers below it (the table at
# the head of server/CMakeLists.txt). Static libraries link only the objects a binary references,
# so an include reaching upward would otherwise go unnoticed until some binary called it.
# Run by ctest (test "layering"); exits 1 naming every offending include.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
declare -A allowed=(
  [kernels]="kernels"
  [backend]="backend kernels"
  [host]="host backend kernels"
  [cuda]="cuda backend kernels"
  [security]="security"
  [ops]="ops backend kernels"
  [graph]="graph ops backend kernels security"
  [engine]="engine graph ops backend kernels security"
  [logging]="logging"
  [metrics]="metrics engine graph ops backend kernels security"
  [cluster]="cluster backend kernels security"
  [service]="service engine graph ops backend kernels security logging metrics"
)
status=0
for layer in "${!allowed[@]}"; do
  dir="$root/server/$layer"
  [ -d "$dir" ] || { echo "check-layers: no directory server/$layer" >&2; status=1; continue; }
  while IFS=: read -r file line include; do
    target=$(sed -E 's|.*#include "server/([a-z_]+)/.*|\1|' <<<"$include")
    if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
      echo "check-layers: ${file#"$root"/}:$line: server/$layer may not include server/$target" >&2
      status=1
    fi
  done < <(grep -rnE '#include "server/[a-z_]+/' "$dir" --include='*.h' --include='*.cc' \
             --include='*.cu' --include='*.cuh' || true)
done
# No two layers may include each other: the table above must be a hierarchy.
for layer in "${!allowed[@]}"; do
  for other in ${allowed[$layer]}; do
    [ "$other" = "$layer" ] && continue
    if [[ -n "${allowed[$other]:-}" && " ${allowed[$other]} " == *" $layer "* ]]; then
      echo "check-layers: server/$layer and server/$other may include each other" >&2
      status=1
    fi
  done
done
[ "$status" = 0 ] && echo "check-layers: every layer includes only the layers below it"
exit "$status"
