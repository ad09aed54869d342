# aivis: `make run` builds everything, registers the official connectors and
# serves on https://localhost:8443 (the dashboard at /; the first start
# prints a one-time link that creates the first owner); `make test` runs
# every test, the dashboard's in headless Chromium among them.
GO      ?= go
BIN     ?= bin
DATA    ?= ./aivis-data
ADDR    ?= 127.0.0.1:8443
export CGO_ENABLED := 1
# What a build says of itself (internal/buildinfo, `aivis version`): git's
# description of the commit (else the VERSION file of a source tree without
# git), the commit, and as its date the commit's time (SOURCE_DATE_EPOCH
# when set), so that two builds of one commit are byte for byte the same.
VERSION := $(or $(VERSION),$(shell git describe --tags --always --dirty 2>/dev/null || cat VERSION 2>/dev/null))
COMMIT := $(or $(COMMIT),$(shell git rev-parse HEAD 2>/dev/null))
SOURCE_DATE_EPOCH := $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null || date +%s))
BUILDINFO := github.com/aivis/aivis/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) \
	-X $(BUILDINFO).date=$(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
export VERSION COMMIT SOURCE_DATE_EPOCH LDFLAGS
# Tools built from the Go module proxy at pinned versions, once, outside
# the repository.
TOOLS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/aivis-tools
export CYCLONEDX := $(TOOLS)/cyclonedx-gomod-v1.10.0/cyclonedx-gomod
# The container image: its name, and where make image lays out its files.
IMAGE ?= aivis
ROOTFS ?= $(BIN)/image
# Where make release writes the tarballs, and for which architectures.
RELEASE ?= $(BIN)/release
export RELEASE_ARCHS ?= amd64 arm64
# The official connectors: one plugin binary per folder of connectors/.
CONNECTORS := $(patsubst connectors/%/main.go,%,$(wildcard connectors/*/main.go))

.PHONY: proto all deps build version rootfs image release run run-cluster test test-short bench fuzz lint fmt clean screenshots

all: build

# Installs what a fresh Debian machine lacks (as root; otherwise it names
# the command that does): a C compiler to build, and git, Node.js, npm and
# Chromium to test.
deps:
	@./scripts/deps.sh test

build:
	@./scripts/deps.sh build
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/aivis ./cmd/aivis
	@for c in $(CONNECTORS); do \
	  $(GO) build -trimpath -o $(BIN)/connectors/$$c ./connectors/$$c || exit 1; done

# Prints the version make build stamps.
version:
	@echo '$(VERSION)'

# The container image's files (the Dockerfile's build stage runs it too):
# static binaries, CA certificates, the user aivis, in $(ROOTFS).
rootfs:
	@./scripts/deps.sh build
	./scripts/dist.sh rootfs $(ROOTFS)

# The container image $(IMAGE):$(VERSION) (and :latest), built by podman
# with no registry (docs/operations.md#installing).
image: rootfs
	@./scripts/deps.sh image
	./scripts/dist.sh image $(ROOTFS) $(IMAGE)

# Tarballs of aivis and the connectors for linux/amd64 and linux/arm64,
# with their SBOMs and SHA256SUMS, in $(RELEASE).
release: $(CYCLONEDX)
	@./scripts/deps.sh release
	./scripts/dist.sh release $(RELEASE)

$(CYCLONEDX):
	GOBIN=$(dir $@) $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0

run: build
	@for c in $(CONNECTORS); do \
	  $(BIN)/aivis plugin register $(BIN)/connectors/$$c --data-dir $(DATA) >/dev/null || exit 1; \
	  echo "connector $$c registered"; done
	$(BIN)/aivis serve --data-dir $(DATA) --addr $(ADDR)

# A trial of a cluster on this machine (docs/scaling.md): two instances,
# https://localhost:8443 and :8444, on the PostgreSQL, NATS and Redis of
# AIVIS_POSTGRES_URL, AIVIS_NATS_URL and AIVIS_REDIS_URL (loopback by
# default), in ./aivis-cluster. Ctrl-C stops both.
run-cluster: build
	@./scripts/deps.sh cluster
	@BIN=$(BIN) ./scripts/run-cluster.sh

# A package's tests may take up to 30 minutes: cmd/aivis's end-to-end
# tests take about 9 on a 2-vCPU machine, and twice that when its host is
# busy.
test: deps lint
	$(GO) test -race -count=1 -timeout 30m ./...

# Runs the dashboard's browser test (needs Chromium) and keeps its
# screenshots in docs/dashboard/.
screenshots: deps
	AIVIS_SCREENSHOTS=$(CURDIR)/docs/dashboard $(GO) test -count=1 -run '^TestDashboardInBrowser$$' ./cmd/aivis

test-short: deps
	$(GO) test -count=1 -short ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime=1x -timeout 40m ./bench/...
	$(GO) test -run '^$$' -bench . -benchmem ./core/limits/...
	$(GO) test -run '^$$' -bench . -benchtime=2s ./core/bus/sqlite/...
	$(GO) test -run '^$$' -bench . -benchtime=2s -timeout 20m ./core/bus/nats/... ./core/bus/postgres/...
	$(GO) test -run '^$$' -bench . -benchtime=40000x ./core/visibility/...
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./core/traffic/...
	$(GO) test -run '^$$' -bench . ./core/lift/...
	$(GO) test -run '^$$' -bench . -benchtime=20x ./core/changes/...
	$(GO) test -run '^$$' -bench 'Traffic' -benchtime=40x ./core/store/sqlite/... ./core/store/postgres/...

# Fuzzes every fuzz target of the repository (each func FuzzXxx of a
# _test.go file, found here: a new one needs no line) for FUZZTIME each,
# one after another, and stops at the first that fails; its input is then
# in the package's testdata/fuzz/FuzzXxx/. `make test` runs each target's
# seeds and testdata/fuzz alone. docs/testing.md lists the targets.
FUZZTIME ?= 30s
fuzz:
	@grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*[(]' . | sort | while read -r file; do \
	  for target in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)[(].*/\1/p' "$$file"); do \
	    echo "== $$target $${file%/*}"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$${file%/*}" || exit 1; \
	  done; done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '\.pb\.go$$')

clean:
	rm -rf $(BIN)

# Regenerates the plugin protocol's Go code (checked in). Needs protoc
# (apt-get install protobuf-compiler) and the two generators below.
proto:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
	cd plugins/proto/connectorv1 && PATH="$$PATH:$$($(GO) env GOPATH)/bin" protoc \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative connector.proto
