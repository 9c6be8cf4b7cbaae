#!/usr/bin/env bash
# prometheus3.sh builds Prometheus 3 (prometheus and promtool, v0.316.0, from
# the Go module proxy, without its web UI) once per machine into a directory
# under the Go build cache, and prints that directory. Later runs find the
# binaries there and return at once; a cold build takes 15-25 min on 2 cores.
set -euo pipefail
version=v0.316.0
dir="${PROMETHEUS3_DIR:-$(go env GOCACHE)/../pushgate-tools/prometheus-$version}"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [[ ! -x "$dir/prometheus" || ! -x "$dir/promtool" ]]; then
  echo "prometheus3: building prometheus and promtool $version into $dir (once per machine)" >&2
  GOBIN="$dir" GOFLAGS=-mod=mod go install \
    "github.com/prometheus/prometheus/cmd/prometheus@$version" \
    "github.com/prometheus/prometheus/cmd/promtool@$version" >&2
fi
"$dir/prometheus" --version >&2
echo "$dir"
