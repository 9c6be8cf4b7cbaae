# pushgate — build and test entry points. `make test` is the one command the
# README and .ci/run use: it installs missing test dependencies, vets, and
# runs every test (unit and end-to-end) under the race detector.

GO ?= go

# ETCDTEST is a test-only module: it runs journal/etcdlog against etcd
# members embedded in the test process. It has a go.mod of its own so that
# the gateway's go.mod requires only etcd's client; ./... does not reach it.
ETCDTEST := journal/etcdlog/etcdtest

.PHONY: all build test test-deps vet e2e

all: build

## build: compile the gateway to bin/pushgate
build:
	$(GO) build -o bin/pushgate ./cmd/pushgate

## test-deps: install what the end-to-end tests drive (idempotent, quick when present)
test-deps:
	scripts/test-deps.sh

## vet: go vet every package
vet:
	$(GO) vet ./...
	cd $(ETCDTEST) && $(GO) vet ./...

## test: dependencies, vet, then all tests with -race
test: test-deps vet
	$(GO) test -race -count=1 -timeout 40m ./...
	cd $(ETCDTEST) && $(GO) test -race -count=1 -timeout 10m ./...

## e2e: only the end-to-end tests (verbose)
e2e: test-deps
	$(GO) test -race -count=1 -timeout 40m -v ./e2e/
