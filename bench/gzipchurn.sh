#!/usr/bin/env bash
# gzipchurn.sh: how long a gzip scrape takes after a wave of pushes, as
# Prometheus sees it (curl, Accept-Encoding: gzip), for one or more builds
# of pushgate, alternating.
#
#   bench/gzipchurn.sh [LABEL=BINARY ...]
#
# Each round starts a build memory-only on loopback, fills CHURN_GROUPS groups with
# the bench payload, takes 7 gzip scrapes INTERVAL apart (the last ones are
# warm: every family cached as a DEFLATE segment), pushes every group again
# (the wave), waits SETTLE, then takes 3 gzip scrapes INTERVAL apart. It
# prints one line per round: the scrape times in seconds, the server's CPU
# seconds from the wave's end to the last scrape, and its RSS.
#
# Without arguments it builds ./cmd/pushgate and measures it with its
# default flags and with --web.gzip-precompress-cpu=0. Environment: CHURN_GROUPS
# (10000), ROUNDS (3), INTERVAL (2 s), SETTLE (5 s), PORT (19391).
set -euo pipefail
: "${CHURN_GROUPS:=10000}" "${ROUNDS:=3}" "${INTERVAL:=2}" "${SETTLE:=5}" "${PORT:=19391}"
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/pushgate-bench" ./cmd/pushgate-bench
builds=("$@")
if ((${#builds[@]} == 0)); then
	go build -o "$work/pushgate" ./cmd/pushgate
	builds=("default=$work/pushgate" "off=$work/pushgate --web.gzip-precompress-cpu=0")
fi
url="http://127.0.0.1:$PORT"
gz() { curl -s -m 60 -o /dev/null -H 'Accept-Encoding: gzip' -w '%{time_total}' "$url/metrics"; }
round() {
	local label=$1
	shift
	# shellcheck disable=SC2086 # the command and its flags
	$* --web.listen-address="127.0.0.1:$PORT" >"$work/$label.log" 2>&1 &
	local pid=$!
	# shellcheck disable=SC2064 # stop this round's server on any exit
	trap "kill $pid 2>/dev/null || true; rm -rf '$work'" EXIT
	for _ in $(seq 100); do curl -sf "$url/-/ready" >/dev/null && break; sleep 0.1; done
	timeout 120 "$work/pushgate-bench" fill -url "$url" -groups "$CHURN_GROUPS" -strict >/dev/null 2>&1
	local warm=() after=()
	for _ in 1 2 3 4 5 6 7; do warm+=("$(gz)"); sleep "$INTERVAL"; done
	timeout 120 "$work/pushgate-bench" fill -url "$url" -groups "$CHURN_GROUPS" -strict >/dev/null 2>&1
	local ticks0 ticks1
	ticks0=$(awk '{print $14+$15}' "/proc/$pid/stat")
	sleep "$SETTLE"
	for _ in 1 2 3; do after+=("$(gz)"); sleep "$INTERVAL"; done
	ticks1=$(awk '{print $14+$15}' "/proc/$pid/stat")
	echo "$label warm: ${warm[*]}  after the wave: ${after[*]}  cpu_s: $(((ticks1 - ticks0) / 100)).$(printf '%02d' $(((ticks1 - ticks0) % 100)))  rss_kib: $(awk '/VmRSS/{print $2}' "/proc/$pid/status")"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}
for ((r = 1; r <= ROUNDS; r++)); do
	for b in "${builds[@]}"; do
		round "${b%%=*}" "${b#*=}"
	done
done
