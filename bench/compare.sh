#!/usr/bin/env bash
# compare.sh: run the same workloads against pushgate, the reference
# Pushgateway and the null server, each on its own loopback port, and print
# one table with the ratios pushgate/null and pushgate/reference.
#
#   bench/compare.sh [--smoke] [--cluster-only] [-o results.jsonl]
#
# --smoke   a tiny run (50 groups, 2 s pushes, about a minute) that proves the
#           script works; it exits non-zero if any step fails or any request
#           errs. CI runs it.
# --cluster-only
#           only the cluster phase (bench/cluster.sh): durable pushes through
#           3 etcd members and 3 replicas against the embedded journal.
# -o FILE   where the JSON-lines results go (default
#           /tmp/pushgate-bench/results-<timestamp>.jsonl); the cluster
#           phase's go to FILE with .jsonl replaced by .cluster.jsonl.
#
# Sizes and limits come from the environment; see bench/README.md. Every
# process the script starts is stopped on exit, and the whole run is bounded
# by COMPARE_TIMEOUT seconds.
set -euo pipefail

smoke=0
cluster_only=0
out=""
while (($#)); do
	case "$1" in
	--smoke) smoke=1 ;;
	--cluster-only) cluster_only=1 ;;
	-o)
		out="${2:?-o needs a file}"
		shift
		;;
	-h | --help)
		sed -n '2,20p' "$0"
		exit 0
		;;
	*)
		echo "compare.sh: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done

if ((smoke)); then
	: "${SIZES:=50}" "${SCRAPE_GROUPS:=50}" "${PUSH_DURATION:=2s}" "${MIXED_DURATION:=2s}"
	: "${FILL_LIMIT:=15s}" "${REF_FILL_LIMIT:=15s}" "${SCRAPE_COUNT:=3}" "${COMPARE_TIMEOUT:=120}"
	: "${CLUSTER_GROUPS:=50}" "${CLUSTER_CLIENTS=8}" "${CLUSTER_DURATION:=1s}" "${LOAD_SIZES=100}"
else
	: "${SIZES:=1000 10000 100000}" "${SCRAPE_GROUPS:=10000}" "${PUSH_DURATION:=10s}" "${MIXED_DURATION:=15s}"
	: "${FILL_LIMIT:=600s}" "${REF_FILL_LIMIT:=180s}" "${SCRAPE_COUNT:=5}" "${COMPARE_TIMEOUT:=3600}"
	: "${CLUSTER_GROUPS:=1000}" "${CLUSTER_CLIENTS=8 32 64}" "${CLUSTER_DURATION:=10s}" "${LOAD_SIZES=10000 100000}"
fi
: "${CLUSTER:=1}" "${ETCD_BIN:=}" "${ETCD_PORT:=19200}" "${CLUSTER_PORT:=19291}" "${JOURNAL_PORT:=19194}"
: "${CLIENTS:=8}" "${SCRAPE_INTERVAL:=1s}" "${PG_PORT:=19191}" "${REF_PORT:=19192}" "${NULL_PORT:=19193}"
: "${REFERENCE_BIN:=/usr/bin/prometheus-pushgateway}" "${PUSHGATE_BIN:=}"

# Bound the whole run: re-run this script under timeout(1). timeout puts
# itself and everything below it in a process group of its own and, when
# the time is up, signals that whole group; the trap below then stops the
# servers. Because that group is not the caller's, this outer shell forwards
# INT, TERM and HUP to it, so Ctrl-C or a CI job's kill still reaches
# every process the run started.
if [[ -z "${COMPARE_UNDER_TIMEOUT:-}" ]]; then
	export COMPARE_UNDER_TIMEOUT=1 SIZES SCRAPE_GROUPS PUSH_DURATION MIXED_DURATION FILL_LIMIT REF_FILL_LIMIT \
		SCRAPE_COUNT COMPARE_TIMEOUT CLIENTS SCRAPE_INTERVAL PG_PORT REF_PORT NULL_PORT REFERENCE_BIN PUSHGATE_BIN \
		CLUSTER CLUSTER_GROUPS CLUSTER_CLIENTS CLUSTER_DURATION LOAD_SIZES ETCD_BIN ETCD_PORT CLUSTER_PORT JOURNAL_PORT
	args=()
	((smoke)) && args+=(--smoke)
	((cluster_only)) && args+=(--cluster-only)
	[[ -n "$out" ]] && args+=(-o "$out")
	timeout --kill-after=10 "$COMPARE_TIMEOUT" "$0" "${args[@]}" &
	tpid=$!
	forward() { kill -TERM -- "-$tpid" 2>/dev/null || kill -TERM "$tpid" 2>/dev/null || true; }
	trap forward INT TERM HUP
	status=0
	wait "$tpid" || status=$?
	while kill -0 "$tpid" 2>/dev/null; do
		status=0
		wait "$tpid" || status=$?
	done
	exit "$status"
fi

repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/pushgate-compare.XXXXXX)"
if [[ -z "$out" ]]; then
	mkdir -p /tmp/pushgate-bench
	out="/tmp/pushgate-bench/results-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
fi
: >"$out"
cluster_out="${out%.jsonl}.cluster.jsonl"
# shellcheck source=bench/cluster.sh
source "$repo/bench/cluster.sh"

pids=()
cleanup() {
	local status=$?
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

log() { printf '%s compare: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# Build the tool and, if its source is there, pushgate.
log "building pushgate-bench"
(cd "$repo" && go build -o "$work/pushgate-bench" ./cmd/pushgate-bench)
bench="$work/pushgate-bench"
if [[ "$PUSHGATE_BIN" == skip ]]; then
	PUSHGATE_BIN=""
elif [[ -z "$PUSHGATE_BIN" && -d "$repo/cmd/pushgate" ]]; then
	log "building pushgate"
	# As `make build` builds the binary that ships (static, stripped): a
	# default build links the C library and keeps its symbols, about 1 MiB
	# more resident after a 10,000-group fill.
	(cd "$repo" && CGO_ENABLED=0 go build -trimpath -tags netgo,osusergo -ldflags '-s -w' -o "$work/pushgate" ./cmd/pushgate)
	PUSHGATE_BIN="$work/pushgate"
fi

strict=()
((smoke)) && strict=(-strict)

# run LABEL NAME SUBCOMMAND ARGS...: one measurement, appended to $out. A
# failed step ends a smoke run at once; a full run notes it, goes on, and
# exits non-zero at the end.
failures=0
run() {
	local label=$1 name=$2 sub=$3
	shift 3
	local rc=0
	"$bench" "$sub" -label "$label" -name "$name" -o "$out" -json "${strict[@]}" "$@" || rc=$?
	if ((rc != 0)); then
		log "FAILED: $label $name ($sub, exit $rc)"
		((smoke)) && exit 1
		failures=$((failures + 1))
		note "$label" "$name" "FAILED: $sub exited with status $rc"
	fi
	return 0
}
note() { "$bench" note -label "$1" -name "$2" -o "$out" -text "$3" >/dev/null; }

# save_body URL ACCEPT FILE: keep one scrape body for the null server.
save_body() {
	"$bench" scrape -url "$1" -accept "$2" -count 1 -save "$3" -json >/dev/null
}

smoke_fail() { if ((smoke)); then exit 1; fi; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start NAME PORT COMMAND...: start a server in the background and wait for
# its /-/ready; sets $server_pid.
start() {
	local name=$1 port=$2
	shift 2
	port_free "$port" || {
		log "port $port is in use; set ${name^^}_PORT"
		return 1
	}
	"$@" >"$work/$name.log" 2>&1 &
	server_pid=$!
	pids+=("$server_pid")
	if ! "$bench" wait -url "http://127.0.0.1:$port" -pid "$server_pid" -timeout 60s 2>>"$work/$name.log"; then
		log "$name did not become ready; its log:"
		tail -20 "$work/$name.log" >&2
		return 1
	fi
}

stop() {
	kill "$1" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$1" 2>/dev/null || true
}

# fill_to LABEL URL FROM TO LIMIT [NAME]: PUT groups FROM..TO-1; returns 1
# if the fill did not finish in LIMIT.
fill_to() {
	local label=$1 url=$2 from=$3 to=$4 limit=$5 name=${6:-fill-$4}
	local line
	# Not in $(...): a failure must reach this shell's count of failures.
	run "$label" "$name" fill -url "$url" -start "$from" -groups $((to - from)) -clients "$CLIENTS" -duration "$limit" -check >"$work/fill.json"
	line=$(<"$work/fill.json")
	if [[ "$line" == *'"finished":false'* ]]; then
		local reached=${line#*\"reached\":}
		reached=${reached%%,*}
		local secs=${line#*\"seconds\":}
		secs=${secs%%,*}
		note "$label" "$name" "did not finish: reached $reached groups in ${secs%.*} s (limit $limit)"
		return 1
	fi
}

# scrapes LABEL URL GROUPS: the scrape workloads at GROUPS stored groups.
scrapes() {
	local label=$1 url=$2 g=$3
	run "$label" "scrape-text-$g" scrape -url "$url" -accept text -count "$SCRAPE_COUNT" -duration 10m >/dev/null
	run "$label" "scrape-protobuf-$g" scrape -url "$url" -accept protobuf -count "$SCRAPE_COUNT" -duration 10m >/dev/null
	run "$label" "scrape-gzip-$g" scrape -url "$url" -accept text -gzip -count "$SCRAPE_COUNT" -duration 10m >/dev/null
}

# mixed LABEL URL GROUPS: pushes while one scraper scrapes text back to
# back (the worst case), then while one scrapes like Prometheus does
# (gzip, every SCRAPE_INTERVAL).
mixed() {
	local label=$1 url=$2 g=$3
	run "$label" "mixed-$g" mixed -url "$url" -groups "$g" -push-clients "$CLIENTS" -scrape-clients 1 \
		-duration "$MIXED_DURATION" -max-requests 5000000 -count 100000 >/dev/null
	run "$label" "mixed-prom-$g" mixed -url "$url" -groups "$g" -push-clients "$CLIENTS" -scrape-clients 1 \
		-gzip -scrape-interval "$SCRAPE_INTERVAL" -duration "$MIXED_DURATION" -max-requests 5000000 -count 100000 >/dev/null
}

# pushes LABEL URL N [PID]: checked PUTs at N groups over keep-alive
# connections, then with a new connection per push, as batch jobs that push
# once and exit. With PID, the keep-alive run also reports the server's CPU
# time per push.
pushes() {
	local label=$1 url=$2 n=$3 pid=()
	if [[ -n "${4:-}" ]]; then
		pid=(-pid "$4")
	fi
	run "$label" "push-$n" push -url "$url" -groups "$n" -clients "$CLIENTS" -duration "$PUSH_DURATION" -method PUT "${pid[@]}" >/dev/null
	run "$label" "push-fresh-$n" push -url "$url" -groups "$n" -clients "$CLIENTS" -duration "$PUSH_DURATION" -method PUT -fresh-conns >/dev/null
}

# otlp_pushes URL N PID: pushgate's OTLP ingest at N groups, the same 74
# samples per push as OTLP/HTTP protobuf and JSON, POSTed to each group's
# /otlp/job/bench/instance/<i>/v1/metrics; reported under the labels
# pushgate-otlp and pushgate-otlp-json in the rows of the text PUTs (push-N),
# so the table shows the OTLP pushes/s beside the text PUT rate and
# pushgate/pushgate-otlp is how many times faster the text push is; the
# "server CPU µs/push" row (from PID's CPU time) compares what each costs
# the server, which the machine's other load moves less than pushes/s.
otlp_pushes() {
	local url=$1 n=$2 pid=$3
	run pushgate-otlp "push-$n" push -url "$url" -groups "$n" -clients "$CLIENTS" -duration "$PUSH_DURATION" -format otlp -pid "$pid" >/dev/null
	run pushgate-otlp-json "push-$n" push -url "$url" -groups "$n" -clients "$CLIENTS" -duration "$PUSH_DURATION" -format otlp-json -pid "$pid" >/dev/null
}

# cluster: the cluster phase, unless CLUSTER=skip or pushgate is not built.
cluster() {
	if [[ "$CLUSTER" == skip ]]; then
		return 0
	fi
	if [[ -z "$PUSHGATE_BIN" ]]; then
		note cluster all "not measured: no ./cmd/pushgate in this tree, or PUSHGATE_BIN=skip"
		return 0
	fi
	cluster_phase
}

# finish: print the tables and the results files, and exit.
finish() {
	if [[ -s "$out" ]]; then
		echo
		"$bench" report -in "$out"
	fi
	if [[ -s "$cluster_out" ]]; then
		echo
		"$bench" report -in "$cluster_out" -base journal -load
	fi
	echo
	if [[ -s "$out" ]]; then
		echo "results: $out"
	fi
	if [[ -s "$cluster_out" ]]; then
		echo "cluster results: $cluster_out"
	fi
	if ((failures > 0)); then
		log "$failures step(s) failed"
		exit 1
	fi
	exit 0
}

if ((cluster_only)); then
	log "results: $cluster_out"
	cluster
	finish
fi

read -r -a sizes <<<"$SIZES"
log "results: $out"

# --- pushgate: checked pushes at every size, scrapes, memory, mixed ------
# The stops are the sizes plus the scrape size, in increasing order; the
# store only grows.
read -r -a stops <<<"$(printf '%s\n' "${sizes[@]}" "$SCRAPE_GROUPS" | sort -n -u | tr '\n' ' ')"
in_sizes() { [[ " ${sizes[*]} " == *" $1 "* ]]; }
pg_url="http://127.0.0.1:$PG_PORT"
if [[ -n "$PUSHGATE_BIN" ]]; then
	log "pushgate: starting"
	start pushgate "$PG_PORT" "$PUSHGATE_BIN" --web.listen-address="127.0.0.1:$PG_PORT" --persistence.file=
	pg_pid=$server_pid
	filled=0
	for n in "${stops[@]}"; do
		log "pushgate: filling to $n"
		fill_to pushgate "$pg_url" "$filled" "$n" "$FILL_LIMIT" || smoke_fail
		filled=$n
		if ((n == SCRAPE_GROUPS)); then
			run pushgate "rss-$n" rss -pid "$pg_pid" >/dev/null
			note pushgate "rss-$n" "RSS measured right after the checked fill to $n groups"
		fi
		if in_sizes "$n"; then
			log "pushgate: pushing at $n groups"
			pushes pushgate "$pg_url" "$n" "$pg_pid"
			log "pushgate: OTLP pushes at $n groups"
			otlp_pushes "$pg_url" "$n" "$pg_pid"
		fi
		if ((n == SCRAPE_GROUPS)); then
			log "pushgate: scraping at $n groups"
			save_body "$pg_url" text "$work/body.txt"
			save_body "$pg_url" protobuf "$work/body.pb"
			scrapes pushgate "$pg_url" "$n"
			run pushgate "rss-after-scrapes-$n" rss -pid "$pg_pid" >/dev/null
			mixed pushgate "$pg_url" "$n"
		fi
	done
	stop "$pg_pid"
else
	log "pushgate: no ./cmd/pushgate and no PUSHGATE_BIN; measuring the reference and the null server only"
	note pushgate all "not measured: no ./cmd/pushgate in this tree, or PUSHGATE_BIN=skip"
fi

# --- the reference, checked: fill and push until a fill does not finish --
ref_url="http://127.0.0.1:$REF_PORT"
log "reference (checked): starting"
start reference "$REF_PORT" "$REFERENCE_BIN" --web.listen-address="127.0.0.1:$REF_PORT" --persistence.file=
ref_pid=$server_pid
filled=0
dnf=""
for n in "${sizes[@]}"; do
	if [[ -n "$dnf" ]]; then
		note reference "push-$n" "skipped: the checked fill did not reach $dnf groups"
		continue
	fi
	log "reference: filling to $n (limit $REF_FILL_LIMIT)"
	if ! fill_to reference "$ref_url" "$filled" "$n" "$REF_FILL_LIMIT"; then
		dnf=$n
		if ((smoke)); then
			log "reference: the fill did not finish in a smoke run"
			exit 1
		fi
		note reference "push-$n" "skipped: the checked fill did not reach $n groups"
		continue
	fi
	filled=$n
	log "reference: pushing at $n groups"
	pushes reference "$ref_url" "$n"
done
stop "$ref_pid"

# --- the reference for scrapes and memory: checked when that fill finished
# above, else unchecked (--push.disable-consistency-check), said in a note --
g=$SCRAPE_GROUPS
ref_flags=()
if [[ -n "$dnf" ]] && ((dnf <= g)); then
	ref_flags=(--push.disable-consistency-check)
	note reference "rss-$g" "filled with --push.disable-consistency-check: the checked fill did not reach $dnf groups in $REF_FILL_LIMIT"
fi
log "reference (${ref_flags[*]:-checked}): starting for scrapes at $g groups"
start reference "$REF_PORT" "$REFERENCE_BIN" --web.listen-address="127.0.0.1:$REF_PORT" --persistence.file= "${ref_flags[@]}"
ref_pid=$server_pid
fill_name="fill-for-scrapes-$g"
((${#ref_flags[@]})) && fill_name="fill-unchecked-$g"
fill_to reference "$ref_url" 0 "$g" "$FILL_LIMIT" "$fill_name" || smoke_fail
run reference "rss-$g" rss -pid "$ref_pid" >/dev/null
if [[ ! -s "$work/body.txt" ]]; then
	save_body "$ref_url" text "$work/body.txt"
	save_body "$ref_url" protobuf "$work/body.pb"
	note null "scrape-text-$g" "serves the reference's scrape body (pushgate was not measured)"
fi
log "reference: scraping at $g groups"
scrapes reference "$ref_url" "$g"
run reference "rss-after-scrapes-$g" rss -pid "$ref_pid" >/dev/null
if [[ ${#ref_flags[@]} -eq 0 ]]; then
	mixed reference "$ref_url" "$g"
else
	note reference "mixed-$g" "skipped: unchecked pushes answer 202 before being applied, so they are not comparable"
fi
stop "$ref_pid"

# --- the null server: the ceiling, serving the same scrape bytes ---------
null_url="http://127.0.0.1:$NULL_PORT"
log "null: starting with a $(stat -c %s "$work/body.txt")-byte body"
start null "$NULL_PORT" "$bench" null -listen "127.0.0.1:$NULL_PORT" -static-file "$work/body.txt" \
	-static-protobuf-file "$work/body.pb" -max-lifetime "${COMPARE_TIMEOUT}s"
null_pid=$server_pid
for n in "${sizes[@]}"; do
	log "null: pushing with $n group names"
	# With its PID: the null server's CPU per push is the floor the
	# gateway's is held against (pushgate/null in the same run).
	pushes null "$null_url" "$n" "$null_pid"
done
scrapes null "$null_url" "$g"
note null "scrape-gzip-$g" "the null server sends gzip compressed once at start, like a static file server with precompressed files"
mixed null "$null_url" "$g"
stop "$null_pid"

# --- pushgate in cluster mode against the embedded journal (cluster.sh) ---
cluster
finish
