#!/usr/bin/env bash
# Runs the test suite of the github.com/hashicorp/nomad/api module version
# pinned in go.mod, unmodified, against bin/drover installed as `nomad` on
# $PATH, then writes CONFORMANCE.md from the `go test -json` output.
#
# Usage: scripts/conformance/run.sh [-check | -write-baseline]
#   (none)           write CONFORMANCE.md (`make conformance`)
#   -check           write bin/CONFORMANCE.md and fail when a test named in
#                    scripts/conformance/baseline.txt did not pass (`make test`)
#   -write-baseline  write CONFORMANCE.md and make the baseline the tests
#                    that passed (`make conformance-baseline`)
# Environment: CONFORMANCE_PARALLEL (default 2), CONFORMANCE_TIMEOUT
# (default 25m), CONFORMANCE_RUN (a -run regexp, for focusing by hand).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
go=${GO:-go}

mod=github.com/hashicorp/nomad/api
version=$($go list -m -f '{{.Version}}' "$mod")
src=$($go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$src" ] || [ ! -d "$src" ]; then
	echo "conformance: cannot find $mod@$version in the module cache" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/drover-conformance.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
# The module cache is read-only; the tests run in a writable copy.
cp -R "$src" "$work/api"
chmod -R u+w "$work/api"
ln -s "$repo/bin/drover" "$work/bin/nomad"

out="$repo/bin/conformance.json"
start=$(date +%s)
set +e
# The suite's agents are children of the test binary; a test that fails
# between starting an agent and deferring its stop leaves it running. The
# run gets its own process group (job control), killed when it ends.
set -m
(
	cd "$work/api"
	PATH="$work/bin:$PATH" GOFLAGS=-mod=mod NOMAD_TEST_LOG_LEVEL=${NOMAD_TEST_LOG_LEVEL:-ERROR} \
		exec $go test -json -count=1 -parallel "${CONFORMANCE_PARALLEL:-2}" \
		-timeout "${CONFORMANCE_TIMEOUT:-25m}" ${CONFORMANCE_RUN:+-run "$CONFORMANCE_RUN"} . \
		>"$out" 2>"$repo/bin/conformance.stderr"
) &
group=$!
wait "$group"
kill -TERM -- "-$group" 2>/dev/null
set +m
set -e
end=$(date +%s)
echo "conformance: go test ran for $((end - start))s against $mod@$version"

report=CONFORMANCE.md
flags=()
case "${1:-}" in
"") ;;
-check)
	report=bin/CONFORMANCE.md
	flags=(-check)
	;;
-write-baseline) flags=(-write-baseline) ;;
*)
	echo "usage: $0 [-check | -write-baseline]" >&2
	exit 2
	;;
esac
$go run ./scripts/conformance/report -in "$out" -src "$work/api" \
	-module "$mod@$version" -seconds $((end - start)) \
	-baseline scripts/conformance/baseline.txt -out "$report" "${flags[@]}"
