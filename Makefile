# Drover build and test entry points. `make test` is what CI runs (.ci/run).
GO ?= go
GOFLAGS ?=
BIN := bin/drover

.PHONY: all build test fuzz bench bench-prefetch bench-prefetch-ahead bench-scale vet fmt-check deps clean demo

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
# then short fuzz runs.
test: build fmt-check vet
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/e2e$$')
	$(GO) test -race -count=1 -timeout 20m ./e2e/
	$(MAKE) fuzz

# Short fuzz runs: the jobspec parser and the job-register decoder.
fuzz:
	$(GO) test ./jobspec -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 20s
	$(GO) test ./command/agent -run '^$$' -fuzz '^FuzzJobRegisterDecode$$' -fuzztime 20s

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x -benchmem ./nomad ./nomad/state ./nomad/fsm ./scheduler

# Per-node downtime of a Docker rolling update, prefetch on and off (real
# Docker engine, throttled in-process registry; about two minutes).
bench-prefetch: build
	DROVER_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench PrefetchGap -benchtime 1x -timeout 20m ./e2e/

bench-prefetch-ahead: build
	DROVER_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench PrefetchAhead -benchtime 1x -timeout 20m ./e2e/

# Fleet-size benchmarks: simulated nodes (nodesim) against a real server
# process; prints CPU, RSS, heartbeat latency, placement and rollout
# timings (DROVER_SCALE_NODES, DROVER_SCALE_ROLLOUTS; several minutes).
bench-scale: build
	DROVER_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench Scale -benchtime 1x -timeout 60m ./e2e/

# The demo: a dev agent and a system job rolled out with a deployment.
demo: build
	./scripts/demo.sh

clean:
	rm -rf bin
