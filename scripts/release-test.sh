#!/usr/bin/env bash
# release-test.sh runs `make release` and checks what it wrote: one tarball
# per architecture in promu's layout (pushgate-<version>.linux-<arch>/ with
# the binary, LICENSE, NOTICE and README.md), sha256sums.txt matching them,
# static binaries for the right architecture, and the build information
# stamped into them (--version prints the VERSION file's version, the git
# revision and branch, the build user and date). It also checks that
# `make build` stamps the same way.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "release-test: FAIL: $*" >&2
  exit 1
}

version=$(cat VERSION)
revision=$(git rev-parse HEAD)
branch=$(git rev-parse --abbrev-ref HEAD)

echo "== release-test: make release"
make release
archs=(amd64 arm64)
[[ $(cd dist && ls | sort | tr '\n' ' ') == "pushgate-$version.linux-amd64.tar.gz pushgate-$version.linux-arm64.tar.gz sha256sums.txt " ]] ||
  fail "dist/ holds: $(ls dist | tr '\n' ' ')"
(cd dist && sha256sum --check --strict sha256sums.txt) || fail "sha256sums.txt does not match"
[[ $(wc -l <dist/sha256sums.txt) -eq ${#archs[@]} ]] || fail "sha256sums.txt has $(wc -l <dist/sha256sums.txt) lines"

work=$(mktemp -d /tmp/pushgate-release-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
for arch in "${archs[@]}"; do
  name=pushgate-$version.linux-$arch
  listing=$(tar -tzf "dist/$name.tar.gz" | sort | tr '\n' ' ')
  [[ $listing == "$name/ $name/LICENSE $name/NOTICE $name/README.md $name/pushgate " ]] || fail "$name.tar.gz holds: $listing"
  tar -xzf "dist/$name.tar.gz" -C "$work"
  cmp -s LICENSE "$work/$name/LICENSE" || fail "$name: LICENSE differs"
  cmp -s README.md "$work/$name/README.md" || fail "$name: README.md differs"
  [[ -x $work/$name/pushgate ]] || fail "$name: the binary is not executable"
  info=$(go version -m "$work/$name/pushgate")
  grep -qP '^\tbuild\tGOARCH='"$arch"'$' <<<"$info" || fail "$name: not built for $arch:
$info"
  grep -qP '^\tbuild\tCGO_ENABLED=0$' <<<"$info" || fail "$name: not a static (CGO_ENABLED=0) build"
done

# The build information, from the binary this machine can run.
want_first="pushgate, version $version (branch: $branch, revision: $revision)"
check_version() {
  local out
  out=$("$1" --version) || fail "$1 --version exited $?"
  [[ $(head -n 1 <<<"$out") == "$want_first" ]] || fail "$1 --version says:
$out
want first line: $want_first"
  grep -qE '^  build user: +[^ ]+@[^ ]+$' <<<"$out" || fail "$1: no build user in:
$out"
  grep -qE '^  build date: +[0-9]{8}-[0-9]{2}:[0-9]{2}:[0-9]{2}$' <<<"$out" || fail "$1: no build date in:
$out"
  grep -qE '^  tags: +netgo,osusergo$' <<<"$out" || fail "$1: tags in:
$out"
}
check_version "$work/pushgate-$version.linux-amd64/pushgate"

# pushgateway_build_info carries the same build information.
port=$((10000 + RANDOM % 20000))
"$work/pushgate-$version.linux-amd64/pushgate" --web.listen-address="127.0.0.1:$port" 2>"$work/gateway.log" &
gateway=$!
trap 'kill "$gateway" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
  [[ $(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/-/ready" || true) == 200 ]] && break
  kill -0 "$gateway" 2>/dev/null || fail "the release binary exited: $(cat "$work/gateway.log")"
  sleep 0.1
done
curl -s -m 10 "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" || fail "cannot scrape the release binary"
kill "$gateway"
wait "$gateway" || true
want_info="pushgateway_build_info{branch=\"$branch\",goarch=\"amd64\",goos=\"linux\",goversion=\"$(go env GOVERSION)\",revision=\"$revision\",tags=\"netgo,osusergo\",version=\"$version\"} 1"
grep -qxF "$want_info" "$work/metrics.txt" || fail "no $want_info in:
$(grep build_info "$work/metrics.txt")"

echo "== release-test: make build"
make build
check_version bin/pushgate
echo "release-test: ok ($(cat dist/sha256sums.txt | tr '\n' ' '))"
