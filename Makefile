# pushgate — build and test entry points. `make test` is the one command the
# README and .ci/run use: it installs missing test dependencies, vets, and
# runs every test (unit and end-to-end) under the race detector.

GO ?= go

# Build information, stamped with -X into github.com/prometheus/common/version
# (what --version, pushgateway_build_info and /api/v1/status show), the way
# promu stamps the reference Pushgateway.
VERSION    ?= $(shell cat VERSION)
REVISION   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH     ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
BUILD_USER ?= $(shell id -un 2>/dev/null || echo unknown)@$(shell hostname 2>/dev/null || echo unknown)
BUILD_DATE ?= $(shell date -u +%Y%m%d-%H:%M:%S)

version_pkg := github.com/prometheus/common/version
LDFLAGS := -s -w \
	-X $(version_pkg).Version=$(VERSION) \
	-X $(version_pkg).Revision=$(REVISION) \
	-X $(version_pkg).Branch=$(BRANCH) \
	-X $(version_pkg).BuildUser=$(BUILD_USER) \
	-X $(version_pkg).BuildDate=$(BUILD_DATE)
# Static binaries (no cgo), as the reference's: they run in a FROM scratch
# image and on any Linux.
BUILDFLAGS := -trimpath -tags netgo,osusergo -ldflags '$(LDFLAGS)'

RELEASE_ARCHS ?= amd64 arm64
IMAGE         ?= pushgate:$(VERSION)
IMAGE_ARCH    ?= amd64
BUILDAH       ?= buildah

# ETCDTEST is a test-only module: it runs journal/etcdlog against etcd
# members embedded in the test process. It has a go.mod of its own so that
# the gateway's go.mod requires only etcd's client; ./... does not reach it.
ETCDTEST := journal/etcdlog/etcdtest
# OTELSDK is a test-only module: a batch job instrumented with the
# OpenTelemetry Go SDK, which e2e builds and runs against the gateway's OTLP
# endpoint, and its own tests. The gateway's go.mod does not carry the SDK.
OTELSDK := e2e/otelsdk

.PHONY: all build test test-deps vet e2e release image image-context

all: build

## build: compile the gateway to bin/pushgate, stamped with the build information
build:
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -o bin/pushgate ./cmd/pushgate

## release: dist/pushgate-<version>.linux-<arch>.tar.gz for each of RELEASE_ARCHS
## (binary, LICENSE, NOTICE, README.md in pushgate-<version>.linux-<arch>/), and
## dist/sha256sums.txt
release:
	rm -rf dist
	set -e; for arch in $(RELEASE_ARCHS); do \
		name=pushgate-$(VERSION).linux-$$arch; \
		mkdir -p dist/$$name; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build $(BUILDFLAGS) -o dist/$$name/pushgate ./cmd/pushgate; \
		cp LICENSE NOTICE README.md dist/$$name/; \
		tar --sort=name --owner=0 --group=0 --numeric-owner -C dist -cf - $$name | gzip -9n > dist/$$name.tar.gz; \
		rm -rf dist/$$name; \
	done
	cd dist && sha256sum *.tar.gz > sha256sums.txt
	cat dist/sha256sums.txt

## image-context: what the Dockerfile copies: .build/linux-$(IMAGE_ARCH)/pushgate
## (static, stamped) and the empty .build/empty
image-context:
	rm -rf .build && mkdir -p .build/linux-$(IMAGE_ARCH) .build/empty
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build $(BUILDFLAGS) -o .build/linux-$(IMAGE_ARCH)/pushgate ./cmd/pushgate

## image: the FROM scratch image (Dockerfile) as $(IMAGE), built with buildah
## for $(IMAGE_ARCH); nothing is pulled
image: image-context
	$(BUILDAH) bud --isolation chroot --arch $(IMAGE_ARCH) --build-arg ARCH=$(IMAGE_ARCH) \
		--build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMAGE) .

## test-deps: install what the end-to-end tests drive (idempotent, quick when present)
test-deps:
	scripts/test-deps.sh

## vet: go vet every package (the oracle test module too)
vet:
	$(GO) vet ./...
	cd e2e/oracle && $(GO) vet ./...
	cd $(ETCDTEST) && $(GO) vet ./...
	cd $(OTELSDK) && $(GO) vet ./...

## test: dependencies, vet, then all tests with -race, then the randomized
## test whose oracle is Prometheus (e2e/oracle, its own module: the gateway's
## go.mod does not carry Prometheus). It drives the built binary and has no
## concurrency of its own, so it runs without -race, after the -race run
## (.ci/run prints the log from that run's first line on).
test: test-deps vet
	$(GO) test -race -count=1 -timeout 40m ./...
	cd e2e/oracle && $(GO) test -count=1 -timeout 20m ./...
	cd $(ETCDTEST) && $(GO) test -race -count=1 -timeout 10m ./...
	cd $(OTELSDK) && $(GO) test -race -count=1 -timeout 10m ./...

## e2e: only the end-to-end tests (verbose)
e2e: test-deps
	$(GO) test -race -count=1 -timeout 40m -v ./e2e/
