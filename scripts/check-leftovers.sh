#!/usr/bin/env bash
# Fails when task executors (`<binary> __drover_executor <spec>`) started
# during this test run are still running at its end, naming each with its
# command line and the processes of its session (its task), then kills
# those sessions so the machine is left clean. `make test` runs it last.
#
# "Of this run": the executor's environment holds DROVER_TEST_RUN with the
# value this script sees (the Makefile exports one per `make test`;
# executors inherit the environment of the agent or test binary that
# started them, the tasks' own environment is the job's). Without
# DROVER_TEST_RUN every executor on the machine counts.
#
# Executors of agents still stopping (a dev agent waits for kill_timeout)
# are given DROVER_LEFTOVER_GRACE seconds (default 15) to go first.
set -euo pipefail

run=${DROVER_TEST_RUN:-}
grace=${DROVER_LEFTOVER_GRACE:-15}

# The chaos suite (e2e/chaos) cuts links in an iptables chain of its own,
# DROVER-CHAOS-<test pid> (and DROVER-CHAOS-<test pid>-M), removed when
# its test ends: one whose test process is gone was left by a test that did
# not clean up. Report it and remove it. A chain whose process still runs
# belongs to a suite running beside this one (a long `make chaos`): it is
# left alone.
if [ "$(id -u)" = 0 ] && command -v iptables >/dev/null 2>&1; then
	chains=$(iptables -w 5 -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^DROVER-CHAOS-/ { print $2 }' |
		while read -r c; do
			pid=${c#DROVER-CHAOS-}
			pid=${pid%-M}
			[ -d "/proc/$pid" ] || echo "$c"
		done)
	if [ -n "$chains" ]; then
		echo "check-leftovers: FAIL: iptables chain(s) of the chaos suite left: $chains" >&2
		for c in $chains; do
			while iptables -w 5 -D OUTPUT -j "$c" 2>/dev/null; do :; done
			iptables -w 5 -F "$c" && iptables -w 5 -X "$c"
		done
		echo "check-leftovers: removed them" >&2
		exit 1
	fi
fi

# leftovers prints the PIDs of this run's executors.
leftovers() {
	local dir pid
	for dir in /proc/[0-9]*; do
		pid=${dir#/proc/}
		local argv=()
		mapfile -d '' -t argv <"$dir/cmdline" 2>/dev/null || continue
		[ "${#argv[@]}" -ge 2 ] && [ "${argv[1]}" = "__drover_executor" ] || continue
		if [ -n "$run" ]; then
			tr '\0' '\n' <"$dir/environ" 2>/dev/null | grep -qxF "DROVER_TEST_RUN=$run" || continue
		fi
		echo "$pid"
	done
}

deadline=$((SECONDS + grace))
pids=$(leftovers)
while [ -n "$pids" ] && [ "$SECONDS" -lt "$deadline" ]; do
	sleep 0.5 # other sessions' exits give no event to wait on
	pids=$(leftovers)
done
if [ -z "$pids" ]; then
	echo "check-leftovers: no task executor of this run${run:+ ($run)} is left"
	exit 0
fi

n=$(echo "$pids" | wc -w)
echo "check-leftovers: FAIL: $n task executor(s) of this run${run:+ ($run)} still running after the tests (a test or agent did not stop what it started):" >&2
for pid in $pids; do
	echo "  executor pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" >&2
	ps -o pid=,args= --sid "$pid" 2>/dev/null | awk -v e="$pid" '$1 != e { print "    task pid " $0 }' >&2 || true
done
for pid in $pids; do
	# Each executor leads its own session; its task leads a group in it.
	pkill -KILL -s "$pid" 2>/dev/null || true
done
echo "check-leftovers: killed their sessions" >&2
exit 1
