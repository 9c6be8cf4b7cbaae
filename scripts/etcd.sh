#!/usr/bin/env bash
# etcd.sh provides the two etcd servers the cluster end-to-end tests run,
# once per machine, in a directory under the Go build cache, and prints
# their paths (etcd37=…, etcd34=…). Later runs find them there at once.
#   etcd 3.7.3: built from go.etcd.io/etcd/server/v3/etcdmain (e2e/etcdserver,
#               a module of its own, so pushgate's module never requires it).
#   etcd 3.4.23: Debian's etcd-server package, unpacked with dpkg-deb -x and
#               never installed (installing it starts a daemon on :2379).
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(go env GOCACHE)/../pushgate-tools"
mkdir -p "$tools"
tools=$(cd "$tools" && pwd)

etcd37="$tools/etcd-v3.7.3/etcd"
if [[ ! -x "$etcd37" ]]; then
  echo "etcd: building etcd 3.7.3 into $(dirname "$etcd37") (once per machine)" >&2
  (cd e2e/etcdserver && GOFLAGS=-mod=mod go build -o "$etcd37.tmp" . >&2)
  mv "$etcd37.tmp" "$etcd37"
fi

deb_dir="$tools/etcd-server-3.4.23"
etcd34="$deb_dir/usr/bin/etcd"
if [[ ! -x "$etcd34" ]]; then
  echo "etcd: unpacking Debian's etcd-server 3.4.23 into $deb_dir (once per machine)" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && apt-get download etcd-server >&2)
  deb=$(ls "$work"/etcd-server_*.deb)
  case "$deb" in
    *etcd-server_3.4.23*) ;;
    *) echo "etcd: apt offers $(basename "$deb"), not 3.4.23; using it all the same" >&2 ;;
  esac
  rm -rf "$deb_dir.tmp"
  dpkg-deb -x "$deb" "$deb_dir.tmp"
  rm -rf "$deb_dir"
  mv "$deb_dir.tmp" "$deb_dir"
fi
"$etcd37" --version | sed -n 1p >&2
"$etcd34" --version | sed -n 1p >&2
echo "etcd37=$etcd37"
echo "etcd34=$etcd34"
