#!/usr/bin/env bash
# scripts/fuzz.sh — run every native Go fuzz target for a bounded time.
#
# `go test -fuzz` takes one target at a time, so the targets run one after
# another, each for $FUZZTIME (default 20s). The seed corpora (f.Add and
# testdata/fuzz/<Target>/) already run in every plain `go test`; this adds
# new inputs. A failing target stops the script with a non-zero status; the
# input that failed is written to <pkg>/testdata/fuzz/<Target>/ and must be
# committed, so that plain `go test` replays it as a regression case.
#
# Then the randomized test whose oracle is Prometheus (e2e/oracle) runs new
# random sequences against each gateway setup for $ORACLE_DURATION each,
# from a random seed it prints; rerun a failure with that ORACLE_SEED.
#
# Go minimizes every input that adds coverage, for up to 60s by default,
# without counting executions meanwhile; with large seed inputs a 20s run
# spent all its time minimizing one input (FuzzTextParserMatchesExpfmt: 202
# executions in 20s). Minimizing is capped at $FUZZMINTIME; the same target
# then ran 77,397 executions in 20s.
#
# Environment: FUZZTIME (e.g. 20s, 5m, 10000x), FUZZMINTIME (default 5s),
# FUZZPARALLEL (workers, default 1: the machine is shared), ORACLE_DURATION (per gateway setup,
# default FUZZTIME when it is a duration, else 20s), ORACLE_OPS (ops per
# sequence, default 80), ORACLE_SEED (default random).
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-20s}
parallel=${FUZZPARALLEL:-1}
mintime=${FUZZMINTIME:-5s}

# package target, one per line.
targets=(
  "./groupkey/ FuzzParsePath"
  "./exposition/ FuzzDecodeText"
  "./exposition/ FuzzTextParserMatchesExpfmt"
  "./exposition/ FuzzDecodeProtobuf"
  "./exposition/ FuzzProtoReaderMatchesUnmarshal"
  "./exposition/ FuzzRenderText"
  "./exposition/ FuzzProtoEncodeFast"
  "./exposition/ FuzzTextTemplate"
  "./web/ FuzzPushScrape"
  "./web/ FuzzOTLPRoundTrip"
  "./labelmatch/ FuzzParse"
)

# fuzz_once PKG TARGET LOG: one bounded fuzzing run, its output shown and
# kept in LOG.
fuzz_once() {
  go test -run '^$' -fuzz "^${2}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$mintime" -parallel "$parallel" "$1" 2>&1 | tee "$3"
}

# engine_timeout LOG PKG TARGET: the run failed with nothing but "context
# deadline exceeded" and wrote no input: Go's fuzzing engine gave up on a
# worker still busy when -fuzztime ran out (seen on the loaded shared
# machine: FuzzRenderText, 19,266 executions, then that line and no
# crasher), which says nothing about the code under test.
engine_timeout() {
  grep -q 'context deadline exceeded' "$1" && ! grep -q -e 'Failing input written' -e '^panic:' -e '--- FAIL: .*(.*)$' <(grep -v "^--- FAIL: $3 " "$1") &&
    [[ -z $(git status --porcelain -- "${2}testdata/fuzz/$3") ]]
}

failed=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for entry in "${targets[@]}"; do
  read -r pkg target <<<"$entry"
  echo "== fuzz $target in $pkg for $fuzztime"
  if fuzz_once "$pkg" "$target" "$log"; then
    continue
  fi
  # Up to two more runs while the engine only timed out: on the loaded
  # machine a retry can meet the same deadline. A crasher ends the loop.
  passed=0
  for retry in 1 2; do
    engine_timeout "$log" "$pkg" "$target" || break
    echo "== fuzz $target: the engine timed out a busy worker at the deadline and found nothing; running it again ($retry of 2)"
    if fuzz_once "$pkg" "$target" "$log"; then
      passed=1
      break
    fi
  done
  ((passed)) && continue
  echo "FAIL: fuzz $target; new crashers are in ${pkg}testdata/fuzz/$target/ — commit them as regression cases"
  failed+=("$target")
done

oracle_duration=${ORACLE_DURATION:-$fuzztime}
[[ $oracle_duration == *x ]] && oracle_duration=20s
echo "== oracle: random sequences for $oracle_duration per gateway setup (e2e/oracle)"
if ! (cd e2e/oracle && ORACLE_SEED="${ORACLE_SEED:-random}" ORACLE_DURATION="$oracle_duration" \
  ORACLE_OPS="${ORACLE_OPS:-80}" ORACLE_SEEDS=1 go test -count=1 -timeout 60m -run '^TestOracle$' -v . |
  grep -v '^=== RUN'); then
  echo "FAIL: oracle; the seed and each violation's shrunk sequence are above"
  failed+=("oracle")
fi

if ((${#failed[@]} > 0)); then
  echo "== fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  git status --short -- '*/testdata/fuzz/*' || true
  exit 1
fi
echo "== fuzz: all ${#targets[@]} targets passed ($fuzztime each), and the oracle ($oracle_duration per setup)"
