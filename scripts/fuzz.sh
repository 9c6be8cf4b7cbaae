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
# Environment: FUZZTIME (e.g. 20s, 5m, 10000x), FUZZPARALLEL (workers,
# default 1: the machine is shared).
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-20s}
parallel=${FUZZPARALLEL:-1}

# package target, one per line.
targets=(
  "./web/ FuzzParseGroupingPath"
  "./exposition/ FuzzDecodeText"
  "./exposition/ FuzzTextParserMatchesExpfmt"
  "./exposition/ FuzzDecodeProtobuf"
  "./exposition/ FuzzProtoReaderMatchesUnmarshal"
  "./exposition/ FuzzRenderText"
  "./exposition/ FuzzProtoEncodeFast"
  "./web/ FuzzPushScrape"
  "./labelmatch/ FuzzParse"
)

failed=()
for entry in "${targets[@]}"; do
  read -r pkg target <<<"$entry"
  echo "== fuzz $target in $pkg for $fuzztime"
  if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -parallel "$parallel" "$pkg"; then
    echo "FAIL: fuzz $target; new crashers are in ${pkg}testdata/fuzz/$target/ — commit them as regression cases"
    failed+=("$target")
  fi
done

if ((${#failed[@]} > 0)); then
  echo "== fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  git status --short -- '*/testdata/fuzz/*' || true
  exit 1
fi
echo "== fuzz: all ${#targets[@]} targets passed ($fuzztime each)"
