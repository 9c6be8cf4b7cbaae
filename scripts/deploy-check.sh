#!/usr/bin/env bash
# deploy-check.sh checks deploy/systemd/pushgate.service with
# `systemd-analyze verify`: any warning (an unknown key, a bad value) fails.
# The unit's ExecStart is pointed at a freshly built binary, since verify
# wants it to exist. systemd (for systemd-analyze) is installed when missing;
# without it the check skips loudly, but fails under CI=true. The unit's
# other promises (ARGS, user, paths) are pinned by cmd/pushgate's
# deploy_test.go.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  if [[ ${CI:-} == true ]]; then
    echo "deploy-check: FAIL: $*" >&2
    exit 1
  fi
  echo "deploy-check: SKIPPING: $*" >&2
  exit 0
}

if ! command -v systemd-analyze >/dev/null 2>&1; then
  [[ $(id -u) -eq 0 ]] || skip "systemd-analyze missing and not root to install systemd"
  echo "deploy-check: installing systemd (for systemd-analyze)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd >/dev/null ||
    skip "cannot install systemd"
fi

work=$(mktemp -d /tmp/pushgate-deploy-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/pushgate" ./cmd/pushgate
sed "s|/usr/bin/pushgate|$work/pushgate|" deploy/systemd/pushgate.service >"$work/pushgate.service"
echo "== deploy-check: systemd-analyze verify deploy/systemd/pushgate.service ($(systemd-analyze --version | head -n 1))"
status=0
out=$(systemd-analyze verify "$work/pushgate.service" 2>&1) || status=$?
if [[ $status -ne 0 || -n $out ]]; then
  echo "deploy-check: FAIL: systemd-analyze verify exited $status:" >&2
  echo "$out" >&2
  exit 1
fi
echo "deploy-check: ok"
