#!/usr/bin/env bash
# prometheus3.sh builds Prometheus 3 (prometheus and promtool, v0.316.0, from
# the Go module proxy, without its web UI) once per machine into a directory
# under the Go build cache, and prints that directory. Later runs find the
# binaries there and return at once; a cold build takes 15-25 min on 2 cores.
#
#   scripts/prometheus3.sh             build when missing, print the directory
#   scripts/prometheus3.sh --no-build  print the directory when both binaries
#                                      are there, else exit 1 (never builds;
#                                      the e2e tests use this to find them)
#
# PROMETHEUS3_DIR overrides the directory. Concurrent builds on one machine
# wait for each other (flock), and the binaries appear in the directory only
# once both are complete, so a reader never runs a half-written file.
set -euo pipefail
version=v0.316.0
dir="${PROMETHEUS3_DIR:-$(go env GOCACHE)/../pushgate-tools/prometheus-$version}"

installed() { [[ -x "$dir/prometheus" && -x "$dir/promtool" ]]; }

if [[ ${1:-} == --no-build ]]; then
  if ! installed; then
    echo "prometheus3: prometheus and promtool $version are not in $dir (run scripts/prometheus3.sh)" >&2
    exit 1
  fi
  (cd "$dir" && pwd)
  exit 0
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if ! installed; then
  exec 9>"$dir/.build.lock"
  if ! flock -n 9; then
    echo "prometheus3: another build into $dir is running; waiting for it" >&2
    flock 9
  fi
  if ! installed; then
    echo "prometheus3: building prometheus and promtool $version into $dir (once per machine)" >&2
    tmp=$(mktemp -d "$dir/.build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    GOBIN="$tmp" GOFLAGS=-mod=mod go install \
      "github.com/prometheus/prometheus/cmd/prometheus@$version" \
      "github.com/prometheus/prometheus/cmd/promtool@$version" >&2
    # Renames within one directory are atomic; prometheus last, so that
    # installed() holds only when both are complete.
    mv -f "$tmp/promtool" "$dir/promtool"
    mv -f "$tmp/prometheus" "$dir/prometheus"
  fi
  exec 9>&-
fi
"$dir/prometheus" --version >/dev/null
echo "prometheus3: prometheus and promtool $version in $dir" >&2
echo "$dir"
