# Drover build and test entry points. `make test` is what CI runs (.ci/run).
GO ?= go
GOFLAGS ?=
BIN := bin/drover

.PHONY: all build test test-unit test-e2e fuzz bench vet fmt-check deps clean demo

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
# detector, short fuzz runs, then the multi-process end-to-end tests.
test: build fmt-check vet
	$(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) fuzz

# Short fuzz runs: the jobspec parser and the job-register decoder.
fuzz:
	$(GO) test ./jobspec -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 20s
	$(GO) test ./command/agent -run '^$$' -fuzz '^FuzzJobRegisterDecode$$' -fuzztime 20s

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x -benchmem ./nomad ./nomad/state ./nomad/fsm ./scheduler

# The demo: a dev agent and a system job rolled out with a deployment.
demo: build
	./scripts/demo.sh

clean:
	rm -rf bin
