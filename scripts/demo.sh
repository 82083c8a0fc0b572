#!/usr/bin/env bash
# Drover demo: a dev agent (server + client) and three more client agents on
# loopback, then a system job rolled out as a deployment:
#   1. job version 0 ("web v1") is placed on every node; the deployment
#      succeeds once each allocation has been healthy for min_healthy_time;
#   2. job version 1 ("web v2") goes to canaries (50% of the nodes) that
#      replace the old allocation in place, waits for promotion, is
#      promoted, then replaces the rest in health-gated waves of
#      max_parallel = 2;
#   3. job version 2 ("web v3") is broken (its task exits): the deployment
#      fails after one wave and auto_revert rolls the fleet back to web v2
#      (job version 3, a copy of the stable version 1).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/drover}
PORT=${DROVER_DEMO_PORT:-4646}
export NOMAD_ADDR="http://127.0.0.1:${PORT}"
WORK=$(mktemp -d /tmp/drover-demo.XXXXXX)
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pkill -f "$WORK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

say() { printf '\n\033[1m### %s\033[0m\n\n' "$*"; }

say "Starting a dev agent on ${NOMAD_ADDR} (logs: ${WORK}/dev.log)"
cat > "$WORK/dev.hcl" <<HCL
ports {
  http = ${PORT}
  rpc  = $((PORT + 1))
}
HCL
"$BIN" agent -dev -config "$WORK/dev.hcl" -data-dir "$WORK/dev" -node dev-node > "$WORK/dev.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do
  "$BIN" node status >/dev/null 2>&1 && break
  sleep 0.2
done

say "Starting three more client agents"
for i in 1 2 3; do
  cat > "$WORK/client$i.hcl" <<HCL
name      = "node-$i"
data_dir  = "$WORK/client$i"
bind_addr = "127.0.0.1"
ports {
  http = $((PORT + 10 * i))
  rpc  = $((PORT + 10 * i + 1))
}
client {
  enabled = true
  servers = ["127.0.0.1:${PORT}"]
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
HCL
  "$BIN" agent -config "$WORK/client$i.hcl" > "$WORK/client$i.log" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 1 100); do
  [ "$("$BIN" node status 2>/dev/null | grep -c ready)" -ge 4 ] && break
  sleep 0.2
done
"$BIN" node status

say "Job version 0 (web v1): placed on every node, deployment gated on health"
"$BIN" job run -var version=1 examples/web.nomad.hcl

say "Job version 1 (web v2): canaries on 50% of the nodes, then promotion"
"$BIN" job run -detach -var version=2 -var canary=50 examples/web.nomad.hcl
for _ in $(seq 1 150); do
  "$BIN" job status web | grep -q "requires manual promotion" && break
  sleep 0.2
done
"$BIN" job status web
DEPLOYMENT=$("$BIN" job status web | awk '/^Latest Deployment/{f=1} f && /^ID/{print $3; exit}')
say "Promoting deployment ${DEPLOYMENT} once its canaries are healthy"
for _ in $(seq 1 60); do
  "$BIN" deployment promote -detach "$DEPLOYMENT" 2>/dev/null && break
  sleep 0.5
done
"$BIN" deployment status -monitor "$DEPLOYMENT"

say "Job version 2 (web v3) is broken: the deployment fails and auto_revert rolls back to web v2"
set +e
"$BIN" job run -var version=3 -var 'command=exit 1' examples/web.nomad.hcl
echo "(job run exited with $? as the deployment failed)"
set -e
sleep 1
"$BIN" job history web | head -20
"$BIN" job status web

say "Done. Every node runs web v2 again (job version 3):"
for alloc in $("$BIN" job status web | awk '/^Allocations/{f=1;next} f && $5=="run" && $6=="running"{print $1}'); do
  "$BIN" alloc logs "$alloc" server | tail -1
done
