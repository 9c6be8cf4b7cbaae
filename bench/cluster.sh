# cluster.sh: the cluster phase of compare.sh, which sources it (it uses
# compare.sh's run, note, start, stop, fill_to, log and work directory).
#
# Durable pushes through a 3-member etcd cluster and 3 pushgate replicas,
# against the embedded journal (--persistence.file, every change fsync'd
# before it is acknowledged) in the same run: for each client count, one
# push run to the journal, then to the cluster's leader, through a follower
# (forwarded to the leader, answered once the follower applied the commit),
# and spread over the 3 replicas, one after the other, so that the load of
# the shared machine weighs on all four alike. Then, for each of
# LOAD_SIZES, how long a gateway restarted on a journal of that many groups
# takes to be ready, and a replica joining the cluster holding as many.
# The results go to their own file, and the table shows each figure as a
# ratio of the journal's.

# etcd_bin prints the etcd 3.7 server to run: ETCD_BIN, or the one
# scripts/etcd.sh builds once per machine.
etcd_bin() {
	if [[ -n "${ETCD_BIN:-}" ]]; then
		echo "$ETCD_BIN"
		return
	fi
	local line
	line=$(bash "$repo/scripts/etcd.sh" 2>>"$work/etcd-build.log" | grep '^etcd37=') || return 1
	echo "${line#etcd37=}"
}

# start_etcd BIN: three members on loopback, from ETCD_PORT up (client and
# peer ports alternate), with periodic auto-compaction as docs/cluster.md advises.
# Sets $etcd_endpoints.
start_etcd() {
	local bin=$1 initial="" endpoints=() i
	for i in 0 1 2; do
		initial+="${initial:+,}e$i=http://127.0.0.1:$((ETCD_PORT + 2 * i + 1))"
	done
	for i in 0 1 2; do
		local client=$((ETCD_PORT + 2 * i)) peer=$((ETCD_PORT + 2 * i + 1))
		port_free "$client" && port_free "$peer" || {
			log "etcd: port $client or $peer is in use; set ETCD_PORT"
			return 1
		}
		"$bin" --name "e$i" --data-dir "$work/etcd-$i" \
			--listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
			--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
			--initial-cluster "$initial" --initial-cluster-state new --initial-cluster-token pushgate-bench \
			--auto-compaction-mode periodic --auto-compaction-retention 1m \
			--log-level warn >"$work/etcd-$i.log" 2>&1 &
		pids+=("$!")
		etcd_pids+=("$!")
		endpoints+=("http://127.0.0.1:$client")
	done
	etcd_endpoints=$(
		IFS=,
		echo "${endpoints[*]}"
	)
}

# leader_index URL...: prints the index of the replica whose
# pushgate_cluster_leader gauge is 1, polling for up to 30 s.
leader_index() {
	local try i
	for try in $(seq 300); do
		i=0
		for u in "$@"; do
			if "$bench" scrape -url "$u" -accept text -count 1 -save "$work/leader.txt" -json >/dev/null 2>&1 &&
				grep -q '^pushgate_cluster_leader 1$' "$work/leader.txt"; then
				echo "$i"
				return 0
			fi
			i=$((i + 1))
		done
		sleep 0.1
	done
	return 1
}

# cluster_phase: the journal and the cluster, measured in turns.
cluster_phase() {
	local main_out=$out
	out=$cluster_out
	: >"$out"
	local bin
	if ! bin=$(etcd_bin) || [[ ! -x "$bin" ]]; then
		log "cluster: no etcd 3.7 server (scripts/etcd.sh failed; see $work/etcd-build.log); set ETCD_BIN"
		note cluster all "not measured: no etcd server (scripts/etcd.sh failed, ETCD_BIN unset)"
		out=$main_out
		if [[ "${CI:-}" == true ]]; then
			exit 1
		fi
		return 0
	fi
	local g=$CLUSTER_GROUPS

	log "cluster: the journal gateway (--persistence.file)"
	local journal_url="http://127.0.0.1:$JOURNAL_PORT"
	phase_pids=() etcd_pids=()
	start journal "$JOURNAL_PORT" "$PUSHGATE_BIN" --web.listen-address="127.0.0.1:$JOURNAL_PORT" \
		--persistence.file="$work/journal.pgj" || exit 1
	phase_pids+=("$server_pid")
	local journal_cpu="gateway:journal=$server_pid"
	fill_to journal "$journal_url" 0 "$g" "$FILL_LIMIT" || smoke_fail

	log "cluster: etcd $("$bin" --version | sed -n 's/^etcd Version: //p') x3 and 3 replicas"
	start_etcd "$bin" || exit 1
	local urls=() replica_pids=() i port
	for i in 0 1 2; do
		port=$((CLUSTER_PORT + i))
		urls+=("http://127.0.0.1:$port")
		# The first replica leads once it is ready: start it alone.
		start "replica-$i" "$port" "$PUSHGATE_BIN" --web.listen-address="127.0.0.1:$port" \
			--cluster.etcd.endpoints="$etcd_endpoints" || exit 1
		phase_pids+=("$server_pid")
		replica_pids+=("$server_pid")
	done
	local li
	li=$(leader_index "${urls[@]}") || {
		log "cluster: no replica leads"
		exit 1
	}
	local leader=${urls[$li]} follower=${urls[$(((li + 1) % 3))]}
	# Every process of the cluster, for the CPU each push costs it: the
	# replicas by role and etcd's members (compared with the journal
	# gateway's single process; etcd is reported apart).
	local cluster_cpu="gateway:leader=${replica_pids[$li]},gateway:follower-a=${replica_pids[$(((li + 1) % 3))]},gateway:follower-b=${replica_pids[$(((li + 2) % 3))]}"
	for i in 0 1 2; do
		cluster_cpu+=",etcd:e$i=${etcd_pids[$i]}"
	done
	local spread
	spread=$(
		IFS=,
		echo "${urls[*]}"
	)
	fill_to cluster-leader "$leader" 0 "$g" "$FILL_LIMIT" || smoke_fail

	local c
	for c in $CLUSTER_CLIENTS; do
		log "cluster: $c clients: journal, leader, follower, spread"
		durable journal "$journal_url" "$g" "$c" "$journal_cpu"
		durable cluster-leader "$leader" "$g" "$c" "$cluster_cpu"
		durable cluster-follower "$follower" "$g" "$c" "$cluster_cpu"
		durable cluster-spread "$spread" "$g" "$c" "$cluster_cpu"
	done
	load_phase "$journal_url" "$leader" "$g"

	# The replicas first: they leave etcd's election as they stop.
	stop_all "${phase_pids[@]}"
	stop_all "${etcd_pids[@]}"
	out=$main_out
}

# stop_all PID...: TERM them all at once (etcd members leaving one by one
# wait for each other), then KILL what still runs after 10 s.
stop_all() {
	local pid
	kill "$@" 2>/dev/null || true
	for _ in $(seq 100); do
		for pid; do
			kill -0 "$pid" 2>/dev/null && break
			pid=""
		done
		[[ -z "$pid" ]] && return 0
		sleep 0.1
	done
	kill -9 "$@" 2>/dev/null || true
}

# load_phase JOURNAL_URL LEADER_URL FILLED: fills the journal gateway and
# the cluster to each of LOAD_SIZES, then times a restart of the journal
# gateway and the start of a fourth replica, up to /-/ready.
load_phase() {
	local journal_url=$1 leader=$2 filled=$3 n
	for n in $LOAD_SIZES; do
		((n > filled)) || continue
		log "cluster: load times at $n groups"
		fill_to journal "$journal_url" "$filled" "$n" "$FILL_LIMIT" "fill-to-$n" || smoke_fail
		fill_to cluster-leader "$leader" "$filled" "$n" "$FILL_LIMIT" "fill-to-$n" || smoke_fail
		filled=$n
		stop "${phase_pids[0]}"
		timed_start journal "load-$n" "$JOURNAL_PORT" "$PUSHGATE_BIN" --web.listen-address="127.0.0.1:$JOURNAL_PORT" \
			--persistence.file="$work/journal.pgj"
		phase_pids[0]=$server_pid
		local port=$((CLUSTER_PORT + 3))
		timed_start cluster-join "load-$n" "$port" "$PUSHGATE_BIN" --web.listen-address="127.0.0.1:$port" \
			--cluster.etcd.endpoints="$etcd_endpoints"
		stop "$server_pid"
	done
}

# timed_start LABEL NAME PORT COMMAND...: start a server in the background
# and record how long it takes to answer /-/ready (its load); sets
# $server_pid.
timed_start() {
	local label=$1 name=$2 port=$3
	shift 3
	port_free "$port" || {
		log "port $port is in use"
		exit 1
	}
	"$@" >>"$work/$label.log" 2>&1 &
	server_pid=$!
	pids+=("$server_pid")
	run "$label" "$name" wait -url "http://127.0.0.1:$port" -pid "$server_pid" -poll 10ms -timeout 10m >/dev/null
}

# durable LABEL URL GROUPS CLIENTS CPU_PIDS: one push run, named for the
# clients, with the CPU per push of every process in CPU_PIDS (-cpu-pids).
durable() {
	run "$1" "durable-push-$3-c$4" push -url "$2" -groups "$3" -clients "$4" -duration "$CLUSTER_DURATION" -method PUT -cpu-pids "$5" >/dev/null
}
