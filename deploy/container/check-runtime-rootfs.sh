#!/usr/bin/env bash
# Proves the image's runtime stage without a Docker engine: builds a Debian 12 root filesystem
# (debootstrap --variant=minbase, the base that debian:bookworm-slim is made from) holding the
# Debian packages of runtime-packages.txt, copies in distarrayd and distarray_probe, and runs
#   distarrayd --backend=host
# in it as uid 65532 on a read-only root with a tmpfs /tmp (as the DaemonSet runs it), with the
# flags of deploy/k8s/base/distarrayd.env in its environment; the probe, also run inside, must
# answer SERVING for readiness and liveness, and the daemon must exit 0 on SIGTERM.
# The CUDA runtime libraries come from NVIDIA's repository in the image, which CI cannot reach:
# they are copied from the local CUDA toolkit when the daemon links them, and a host-only build
# needs none. Needs root (debootstrap, chroot, mounts); skips with a message otherwise.
# The root filesystem is kept in $BUILD_DIR/deploy/rootfs/root, keyed by the package list: the
# first run downloads about 60 MB of packages (about 1.5 min; the .deb files are kept in
# $BUILD_DIR/deploy/rootfs/debs, so a changed list fetches only what is new), re-runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
daemon=$build/server/distarrayd
probe=$build/server/distarray_probe
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
say() { echo "rootfs: $*"; }

if [ "$(id -u)" -ne 0 ]; then
  say "SKIPPED: needs root for debootstrap, chroot and mounts (running as uid $(id -u))"
  exit 0
fi
for tool in debootstrap unshare chroot; do
  command -v "$tool" >/dev/null || { say "FAILED: $tool not found (scripts/install-deps.sh)"; exit 1; }
done
[ -x "$daemon" ] || { say "FAILED: $daemon not built"; exit 1; }

packages=$(grep -v -e '^#' -e '^$' -e '^nvidia:' deploy/container/runtime-packages.txt |
  sed 's/^dlopen://' | paste -sd,)
key=$(printf '%s\n%s\n' "$packages" "$mirror" | sha256sum | cut -c1-16)
work=$build/deploy/rootfs
root=$work/root
start=$SECONDS
mkdir -p "$work"
if [ "$(cat "$work/root.key" 2>/dev/null)" != "$key" ]; then
  say "building bookworm minbase with $packages (kept in $root for the next run)"
  rm -rf "$root" "$work/root.key"
  mkdir -p "$work/debs"
  debootstrap --variant=minbase --cache-dir="$(realpath "$work/debs")" --include="$packages" \
    bookworm "$root" "$mirror" \
    > "$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; say "FAILED: debootstrap"; exit 1; }
  echo "$key" > "$work/root.key"
fi
say "root filesystem ready in $((SECONDS - start)) s"

# Every listed package is installed in the tree (the image installs the same list).
for package in ${packages//,/ }; do
  dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}\n' "$package" 2>/dev/null \
    | grep -q "install ok installed" || { say "FAILED: $package missing from the tree"; exit 1; }
done

install -m 0755 "$daemon" "$root/usr/local/bin/distarrayd"
if [ -x "$probe" ]; then install -m 0755 "$probe" "$root/usr/local/bin/distarray_probe"; fi
foreign=$(deploy/container/derive-runtime-packages.sh "$daemon" | sed -n 's/^# not-debian //p')
if [ -n "$foreign" ]; then
  mkdir -p "$root/usr/local/lib/distarray"
  while read -r soname path; do cp -L "$path" "$root/usr/local/lib/distarray/$soname"; done <<< "$foreign"
  say "CUDA build: copied $(echo "$foreign" | cut -d' ' -f1 | paste -sd' ') from the local CUDA toolkit" \
      "(the image installs them from NVIDIA's repository)"
else
  say "host-only build: the daemon links no CUDA library"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
api=$(free_port); health=$(free_port); metrics=$(free_port)
env_file=deploy/k8s/base/distarrayd.env
probe_cmd=(/usr/local/bin/distarray_probe "--address=127.0.0.1:$health" --timeout_ms=2000)
health_flag=--health_listen=127.0.0.1:$health
daemon_help=$("$daemon" --helpfull 2>&1 || true)
[ -x "$probe" ] || { say "FAILED: $probe not built"; exit 1; }
export ROOT=$root API=$api METRICS=$metrics HEALTH_FLAG=$health_flag
export CONFIG_ENV="$(grep -v -e '^#' -e '^$' "$env_file")"
export PROBE="${probe_cmd[*]}" CHECK_JSON_LOG=""
if grep -q '^DISTARRAY_LOG_FORMAT=json$' "$env_file" && grep -q -- --log_format <<< "$daemon_help"; then
  CHECK_JSON_LOG=1
fi
# A private mount and PID namespace: the read-only bind, /proc and /tmp go away with it.
unshare --fork --pid --mount --propagation private bash -euo pipefail -c '
  mount --bind "$ROOT" "$ROOT" && mount -o remount,ro,bind "$ROOT"
  mount -t proc proc "$ROOT/proc"
  mount -t tmpfs -o size=64m,mode=1777 tmpfs "$ROOT/tmp"
  as_user() { chroot --userspec=65532:65532 "$ROOT" env -i LD_LIBRARY_PATH=/usr/local/lib/distarray "$@"; }
  # The ConfigMap flags as the DaemonSet passes them; the command line wins for addresses and
  # backend (CI has no GPU, and the pod network is loopback here).
  mapfile -t config <<< "$CONFIG_ENV"
  chroot --userspec=65532:65532 "$ROOT" env -i LD_LIBRARY_PATH=/usr/local/lib/distarray \
      "${config[@]}" /usr/local/bin/distarrayd --backend=host --host_devices=2 \
      --listen=127.0.0.1:$API $HEALTH_FLAG --metrics_listen=127.0.0.1:$METRICS \
      > "$ROOT/tmp/daemon.log" 2>&1 &
  pid=$!
  stop() { kill -TERM $pid 2>/dev/null || true; }
  trap stop EXIT
  serving=""
  for _ in $(seq 100); do
    kill -0 $pid 2>/dev/null || break
    as_user $PROBE --service=readiness >/dev/null 2>&1 && serving=readiness && break
    sleep 0.2
  done
  uid=$(awk "/^Uid:/{print \$2}" "$ROOT/proc/$pid/status" 2>/dev/null || echo none)
  if [ -z "$serving" ]; then
    cat "$ROOT/tmp/daemon.log"; echo "rootfs: FAILED: the daemon never answered SERVING"; exit 1
  fi
  as_user $PROBE --service=liveness >/dev/null || { echo "rootfs: FAILED: liveness not SERVING"; exit 1; }
  echo "rootfs: distarray_probe inside the root filesystem: readiness and liveness SERVING"
  [ "$uid" = 65532 ] || { echo "rootfs: FAILED: the daemon ran as uid $uid, not 65532"; exit 1; }
  trap - EXIT
  kill -TERM $pid
  rc=0; wait $pid || rc=$?
  [ $rc -eq 0 ] || { cat "$ROOT/tmp/daemon.log"; echo "rootfs: FAILED: exit $rc after SIGTERM"; exit 1; }
  if grep "names no flag" "$ROOT/tmp/daemon.log"; then
    echo "rootfs: FAILED: distarrayd.env holds a variable the daemon does not know"; exit 1
  fi
  if [ -n "$CHECK_JSON_LOG" ]; then
    head -c1 "$ROOT/tmp/daemon.log" | grep -q "{" \
      || { head -3 "$ROOT/tmp/daemon.log"; echo "rootfs: FAILED: DISTARRAY_LOG_FORMAT=json not applied"; exit 1; }
    echo "rootfs: the ConfigMap flags reached the daemon (DISTARRAY_LOG_FORMAT=json: JSON log lines)"
  fi
  echo "rootfs: distarrayd ran as uid 65532 on a read-only root and exited 0 after SIGTERM"
'
say "passed in $((SECONDS - start)) s"
