#!/usr/bin/env bash
# image-test.sh builds the image from the root Dockerfile with Debian's
# buildah (vfs storage, chroot isolation: no daemon, nothing pulled) and runs
# its root file system the way Kubernetes runs the Helm chart's pod: as uid
# and gid 65534, the root file system read-only, only a /data volume
# writable. It checks the image's configuration and files, that the probes
# answer 200, that a push with --persistence.file=/data/… answers 200 and
# survives a restart, and that nothing was written outside /data.
#
# buildah is installed when missing (Debian package). Without root or
# buildah the script skips loudly, but fails under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  if [[ ${CI:-} == true ]]; then
    echo "image-test: FAIL: $*" >&2
    exit 1
  fi
  echo "image-test: SKIPPING: $*" >&2
  exit 0
}

[[ $(id -u) -eq 0 ]] || skip "needs root (buildah storage, chroot, mount namespace)"
if ! command -v buildah >/dev/null 2>&1; then
  echo "image-test: installing buildah"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends buildah >/dev/null ||
    skip "cannot install buildah"
fi

work=$(mktemp -d /tmp/pushgate-image-test.XXXXXX)
pid=
container=
buildah=(buildah --storage-driver vfs --root "$work/storage" --runroot "$work/run")
# gateway_pid is the gateway's own pid: unshare --fork ignores SIGTERM while
# it waits for its child, so signals go to the child.
gateway_pid() {
  local children
  children=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null || pgrep -P "$pid")
  echo "${children%% *}"
}
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$(gateway_pid)" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [[ -n $container ]]; then
    "${buildah[@]}" umount "$container" >/dev/null 2>&1 || true
    "${buildah[@]}" rm "$container" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "image-test: FAIL: $*" >&2
  if [[ -f $work/gateway.log ]]; then
    echo "---- gateway log ----" >&2
    tail -n 50 "$work/gateway.log" >&2
  fi
  exit 1
}

image=pushgate:image-test
echo "== image-test: make image"
make image IMAGE="$image" BUILDAH="${buildah[*]}"

echo "== image-test: configuration"
inspect() { "${buildah[@]}" inspect --type image --format "$1" "$image"; }
[[ $(inspect '{{.OCIv1.Config.User}}') == 65534 ]] || fail "user is $(inspect '{{.OCIv1.Config.User}}'), want 65534"
[[ $(inspect '{{.OCIv1.Config.WorkingDir}}') == /pushgateway ]] || fail "workdir is $(inspect '{{.OCIv1.Config.WorkingDir}}')"
[[ $(inspect '{{range .OCIv1.Config.Entrypoint}}<{{.}}>{{end}}') == '</bin/pushgate>' ]] || fail "entrypoint is $(inspect '{{.OCIv1.Config.Entrypoint}}')"
[[ $(inspect '{{len .OCIv1.Config.Cmd}}') == 0 ]] || fail "cmd is $(inspect '{{.OCIv1.Config.Cmd}}'), want none (the chart sets args)"
[[ $(inspect '{{range $port, $_ := .OCIv1.Config.ExposedPorts}}<{{$port}}>{{end}}') == '<9091/tcp>' ]] || fail "exposed ports are $(inspect '{{.OCIv1.Config.ExposedPorts}}')"
version=$(cat VERSION)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
label() { inspect "{{index .OCIv1.Config.Labels \"org.opencontainers.image.$1\"}}"; }
[[ $(label version) == "$version" ]] || fail "version label $(label version), want $version"
[[ $(label revision) == "$revision" ]] || fail "revision label $(label revision), want $revision"
[[ $(label source) == https://github.com/pushgate/pushgate ]] || fail "source label $(label source)"
[[ $(label licenses) == Apache-2.0 ]] || fail "licenses label $(label licenses)"

echo "== image-test: root file system"
container=$("${buildah[@]}" from "$image")
mounted=$("${buildah[@]}" mount "$container")
root=$work/rootfs
cp -a "$mounted" "$root"
files=$(cd "$root" && find . -mindepth 1 -printf '%p %U:%G %m\n' | sort)
want_files=$(printf '%s\n' "./LICENSE 0:0 644" "./NOTICE 0:0 644" "./bin 0:0 755" "./bin/pushgate 0:0 755" "./pushgateway 65534:65534 755" | sort)
[[ $files == "$want_files" ]] || fail "image files:
$files
want:
$want_files"
cmp -s LICENSE "$root/LICENSE" || fail "LICENSE differs"
cmp -s NOTICE "$root/NOTICE" || fail "NOTICE differs"
"$root/bin/pushgate" --version | head -n 1 | grep -qF "pushgate, version $version (branch: " || fail "the image's binary is not version $version"

mkdir "$root/data"                 # the mount point, as a volume has one
data=$work/data
mkdir "$data"
chown 65534:65534 "$data"
listing() { (cd "$root" && find . -path ./data -prune -o -printf '%p %s %T@ %m %U:%G\n' | sort); }
before=$(listing)

port=$((10000 + RANDOM % 20000))
for _ in 1 2 3 4 5 6 7 8 9 10; do
  ss -tan 2>/dev/null | grep -q ":$port " || break
  port=$((10000 + RANDOM % 20000))
done
base=http://127.0.0.1:$port

status() { curl -s -m 10 -o /dev/null -w '%{http_code}' "$@"; }

# run starts the image's entrypoint as the Helm chart's pod would: uid and
# gid 65534, root read-only, /data a writable volume, the chart's args.
run() {
  unshare --mount --fork sh -c '
    set -e
    mount --bind "$1" "$1"
    mount -o remount,bind,ro "$1"
    mount --bind "$2" "$1/data"
    cd "$1"
    exec chroot --userspec=65534:65534 "$1" /bin/pushgate "--web.listen-address=127.0.0.1:$3" --persistence.file=/data/pushgateway.data
  ' run "$root" "$data" "$port" >>"$work/gateway.log" 2>&1 &
  pid=$!
  local i
  for i in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || fail "the gateway exited at start"
    if [[ $(status "$base/-/ready" || true) == 200 ]]; then
      return
    fi
    sleep 0.1
  done
  fail "the gateway did not answer /-/ready within 30s"
}
stop() {
  kill -TERM "$(gateway_pid)"
  local code=0
  wait "$pid" || code=$?
  pid=
  [[ $code -eq 0 ]] || fail "the gateway exited $code on SIGTERM"
}

echo "== image-test: run as 65534:65534 with only /data writable (port $port)"
run
[[ $(status "$base/-/healthy") == 200 ]] || fail "/-/healthy"
[[ $(status "$base/-/ready") == 200 ]] || fail "/-/ready"
code=$(printf '# TYPE image_test_pushes gauge\nimage_test_pushes 42\n' |
  curl -s -m 10 -o /dev/null -w '%{http_code}' --data-binary @- -X PUT "$base/metrics/job/image-test/instance/chroot")
[[ $code == 200 ]] || fail "push answered $code"
scraped() { curl -s -m 30 "$base/metrics" >"$work/scrape.txt" && grep -q '^image_test_pushes{instance="chroot",job="image-test"} 42$' "$work/scrape.txt"; }
scraped || fail "the push is not scraped"
stop
[[ -s $data/pushgateway.data ]] || fail "nothing persisted in /data"
[[ $(stat -c %u:%g "$data/pushgateway.data") == 65534:65534 ]] || fail "the journal is not owned by 65534"

echo "== image-test: restart on the same volume"
run
scraped || fail "the push did not survive a restart"
stop

after=$(listing)
[[ $before == "$after" ]] || fail "files outside /data changed:
$(diff <(echo "$before") <(echo "$after") || true)"
echo "image-test: ok (image $(inspect '{{.FromImageID}}' | cut -c1-12), files in /data: $(cd "$data" && ls | tr '\n' ' '))"
