#!/usr/bin/env bash
# test-deps.sh installs what pushgate's end-to-end tests drive, only when it
# is missing, so a second run costs well under a second:
#   Debian packages: prometheus, prometheus-pushgateway (the reference),
#                    python3-prometheus-client, curl, nodejs, npm
#   Debian packages: chromium (the browser test drives it; no browser download)
#   etcd 3.7.3 (built) and Debian's etcd-server 3.4.23 (unpacked, not
#                    installed), by scripts/etcd.sh, for the cluster tests
#   npm modules:     e2e/node/node_modules (prom-client and the OpenTelemetry
#                    SDK with its OTLP exporters, from package-lock.json)
#                    e2e/browser/node_modules (playwright-core)
#   Prometheus 3:    prometheus and promtool v0.316.0, built once per machine
#                    by scripts/prometheus3.sh (a cold build takes 15-25 min;
#                    the e2e tests find the binaries through that script)
#   Go modules:      e2e/oracle's (Prometheus' textparse) and e2e/otelsdk's
#                    (the OpenTelemetry Go SDK), into the module cache
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v prometheus-pushgateway >/dev/null 2>&1 || missing+=(prometheus-pushgateway)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
if ! /usr/bin/python3 -c 'import prometheus_client' >/dev/null 2>&1; then
  missing+=(python3-prometheus-client)
fi

if ((${#missing[@]} > 0)); then
  echo "test-deps: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
  # Debian's package starts the reference Pushgateway (and Prometheus) as
  # services where an init system runs; the tests start their own on free
  # ports, so nothing here depends on them.
fi

# node_modules_current DIR: every dependency DIR/package.json pins is
# installed in DIR/node_modules at exactly that version (a node_modules left
# from before a dependency was added or bumped is not).
node_modules_current() {
  node -e '
    const dir = process.argv[1];
    const deps = require(dir + "/package.json").dependencies || {};
    for (const [name, want] of Object.entries(deps)) {
      let got;
      try {
        got = require(dir + "/node_modules/" + name + "/package.json").version;
      } catch (e) {
        process.exit(1);
      }
      if (got !== want) process.exit(1);
    }' "$PWD/$1"
}

# prom-client, and the OpenTelemetry JS SDK with its OTLP exporters (JSON and
# protobuf), exactly as package-lock.json pins them.
if ! node_modules_current e2e/node; then
  echo "test-deps: npm ci in e2e/node"
  (cd e2e/node && npm ci --no-audit --no-fund)
fi
if [[ ! -d e2e/browser/node_modules/playwright-core ]]; then
  echo "test-deps: npm ci in e2e/browser"
  (cd e2e/browser && npm ci --no-audit --no-fund)
fi
scripts/prometheus3.sh >/dev/null
# The oracle test's own module (Prometheus' textparse); instant when cached.
(cd e2e/oracle && go mod download)
# The OpenTelemetry Go SDK batch job's module (e2e/otelsdk).
(cd e2e/otelsdk && go mod download)
bash scripts/etcd.sh >/dev/null
echo "test-deps: ok"
