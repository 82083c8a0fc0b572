# Drover build and test entry points. `make test` is what CI runs (.ci/run).
GO ?= go
GOFLAGS ?=
BIN := bin/drover
# One value per `make test`, inherited by every test, agent and executor it starts: `test` ends with scripts/check-leftovers.sh.
export DROVER_TEST_RUN := $(or $(DROVER_TEST_RUN),make-$(shell date +%s%N))

.PHONY: all build test chaos ui-deps cni-deps prometheus-deps fuzz bench bench-prefetch bench-prefetch-ahead bench-bridge bench-scale bench-fleet vet fmt-check deps clean demo conformance conformance-baseline screenshots

all: build

deps: ## download Go modules (the only set-up Drover needs besides Go 1.26)
	$(GO) mod download

build: deps
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/drover

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# The whole suite: formatting, vet, unit and contract tests with the race
# detector, then the multi-process end-to-end tests on their own (they time
# rollouts on the shared Docker engine, so nothing else runs beside them),
# then short fuzz runs, then the nomad/api conformance suite (a baselined
# test that stops passing fails the build).
test: build fmt-check vet ui-deps cni-deps prometheus-deps
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/e2e$$')
	$(GO) test -race -count=1 -timeout 20m ./e2e/
	$(MAKE) fuzz
	./scripts/conformance/run.sh -check
	./scripts/check-leftovers.sh

# The unmodified test suite of the nomad/api module version in go.mod, run
# against bin/drover as `nomad`; writes CONFORMANCE.md.
conformance: build
	./scripts/conformance/run.sh

# Same, and make the baseline CI checks the tests that passed in this run.
conformance-baseline: build
	./scripts/conformance/run.sh -write-baseline

# Headless Chromium for the web UI's browser tests (Debian's chromium),
# installed only when no Chromium is found; without one they skip loudly.
ui-deps:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; then \
		echo "ui-deps: chromium found"; \
	else \
		(apt-get update && apt-get install -y chromium) || echo "ui-deps: could not install chromium; the UI browser tests will skip"; \
	fi

# The reference CNI plugins for bridge networking (Debian's
# containernetworking-plugins, in /usr/lib/cni), installed only when
# missing; without them the bridge tests skip loudly.
cni-deps:
	@if [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/portmap ] && [ -x /usr/lib/cni/firewall ]; then \
		echo "cni-deps: CNI plugins found"; \
	else \
		(apt-get update && apt-get install -y containernetworking-plugins) || echo "cni-deps: could not install containernetworking-plugins; the bridge networking tests will skip"; \
	fi

# The e2e tests of metric gates run a real Prometheus (Debian's package);
# without it they skip.
prometheus-deps:
	@if command -v prometheus >/dev/null 2>&1; then \
		echo "prometheus-deps: prometheus found"; \
	else \
		(apt-get update && apt-get install -y prometheus) || echo "prometheus-deps: could not install prometheus; the metric gate e2e tests will skip"; \
	fi

# The fault-injection suite (e2e/chaos, docs/chaos.md): a three-server
# cluster under seeded partitions, pauses, kills and packet loss, its
# histories checked with porcupine; prints the table. SEED (default: the
# time) and FAULTS (default 60, about twelve minutes) name the run; `make
# test` runs a short one (6 faults). Needs root, iptables and cgroup2.
chaos: build
	DROVER_BIN=$(CURDIR)/$(BIN) DROVER_CHAOS_SEED=$(or $(SEED),$(shell date +%s)) DROVER_CHAOS_FAULTS=$(or $(FAULTS),60) \
		$(GO) test ./e2e/chaos -run '^TestChaos$$' -count=1 -v -timeout 0

# Short fuzz runs: the jobspec parser and the job-register decoder.
fuzz:
	$(GO) test ./jobspec -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 20s -fuzzminimizetime 1s
	$(GO) test ./command/agent -run '^$$' -fuzz '^FuzzJobRegisterDecode$$' -fuzztime 20s -fuzzminimizetime 1s

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x -benchmem ./nomad ./nomad/state ./nomad/fsm ./scheduler

# Per-node downtime of a Docker rolling update, prefetch on and off (real
# Docker engine, throttled in-process registry; about two minutes).
bench-prefetch: build
	DROVER_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench PrefetchGap -benchtime 1x -timeout 20m ./e2e/

# Rollout time over four Docker clients in waves of one, ahead-of-wave
# prefetch on and off; each client gets a private dockerd (needs root;
# about two and a half minutes).
bench-prefetch-ahead: build
	DROVER_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench PrefetchAhead -benchtime 1x -timeout 20m ./e2e/

# Per-node dark time of a static-port system-job rollout with prefetch,
# host networking and bridge mode side by side on one client (root, the CNI
# plugins, a Docker engine; about a minute).
bench-bridge: build cni-deps
	DROVER_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench PrefetchGapBridge -benchtime 1x -timeout 20m ./e2e/

# Fleet-size benchmarks: simulated nodes (nodesim) against a real server
# process; prints CPU, RSS, heartbeat latency, placement and rollout
# timings on 1 and 3 servers, the 3-server run with a leader failover
# (DROVER_SCALE_NODES, DROVER_SCALE_SERVERS, DROVER_SCALE_ROLLOUTS,
# DROVER_SCALE_SIM_LOG; several minutes per fleet size).
bench-scale: build
	DROVER_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench Scale -benchtime 1x -timeout 60m ./e2e/

# Fleet rollout on one server, from the API's timestamps and /proc:
# placement, rollout against its floor, per-wave control-plane delay,
# server CPU and peak RSS per phase, missed heartbeats
# (DROVER_FLEET_NODES, default 1000,3000; DROVER_FLEET_ROUNDS; with
# NOMAD_BIN and NOMAD_NODESIM_BIN also the operator's own Nomad build,
# alternating). One to two minutes per fleet size and round.
bench-fleet: build
	DROVER_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench Fleet -benchtime 1x -timeout 60m ./e2e/

# The demo: a dev agent and a system job rolled out with a deployment.
demo: build
	./scripts/demo.sh

clean:
	rm -rf bin

# The README's screenshots of the web UI, made by its browser tests.
screenshots: build ui-deps
	DROVER_SCREENSHOTS=$(CURDIR)/docs/screenshots DROVER_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -run 'TestUIRolloutStory|TestUIRolloutLoad2000' ./e2e/
