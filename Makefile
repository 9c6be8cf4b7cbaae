# pushgate — build and test entry points. `make test` is the one command the
# README and .ci/run use: it installs missing test dependencies, vets, and
# runs every test (unit and end-to-end) under the race detector.

GO ?= go

.PHONY: all build test test-deps vet e2e

all: build

## build: compile the gateway to bin/pushgate
build:
	$(GO) build -o bin/pushgate ./cmd/pushgate

## test-deps: install what the end-to-end tests drive (idempotent, quick when present)
test-deps:
	scripts/test-deps.sh

## vet: go vet every package (the oracle test module too)
vet:
	$(GO) vet ./...
	cd e2e/oracle && $(GO) vet ./...

## test: dependencies, vet, then all tests with -race, then the randomized
## test whose oracle is Prometheus (e2e/oracle, its own module: the gateway's
## go.mod does not carry Prometheus). It drives the built binary and has no
## concurrency of its own, so it runs without -race, after the -race run
## (.ci/run prints the log from that run's first line on).
test: test-deps vet
	$(GO) test -race -count=1 -timeout 40m ./...
	cd e2e/oracle && $(GO) test -count=1 -timeout 20m ./...

## e2e: only the end-to-end tests (verbose)
e2e: test-deps
	$(GO) test -race -count=1 -timeout 40m -v ./e2e/
