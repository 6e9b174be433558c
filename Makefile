# OpenProgram — one repository, several Go modules (see go.work).
#
# Every target loops over the modules that go.work lists, so adding a module
# needs no edit here. Each module is built and tested on its own
# (GOWORK=off): that is how client projects and releases see it.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
ACTIONLINT  ?= github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
BENCHSTAT   ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
# Modules in go.work order, as paths relative to the repository root.
MODULES     := $(shell ./scripts/modules.sh)
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# The commit's own date in UTC, so two builds of one commit stamp the same date.
BUILD_DATE  ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS     := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(BUILD_DATE)
# What make dist builds: GOOS/GOARCH pairs.
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
BENCHTIME   ?= 1s
BENCHCOUNT  ?= 6
# Modules whose dependency graph must stay light: client projects import them.
LIGHT_MODULES := contracts
HEAVY_DEPS    := jackc/pgx|modernc.org/sqlite|alecthomas/kong|openai-go|anthropic-sdk-go|testcontainers

export GOWORK := off
export CGO_ENABLED ?= 1

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z/%-]+:.*## ' $(MAKEFILE_LIST) | sed -e 's/:.*## /\t/' | sort

.PHONY: modules
modules: ## print the modules go.work lists
	@printf '%s\n' $(MODULES)

# make test runs every module even when one fails, then prints each
# package's time (slowest first, the top TESTTOP) and the modules that
# failed, and fails if any did. Per-module output is kept in $(TESTLOG).
TESTLOG  ?= $(CURDIR)/.testlog
TESTTOP  ?= 10
TESTTAGS ?=
# The end-to-end packages (cli/e2e, cli/e2e/interop/..., cli/e2e/tasks, cli/e2e/dist) drive
# real clients (90 s turns) and pack a bundle: go test's default 10 minutes
# per package is too tight on 2 loaded cores.
TESTTIMEOUT ?= 30m

.PHONY: test
test: ## run every module's tests with -race, all of them even after a failure, then a summary (PostgreSQL suites use OPENPROGRAM_TEST_DATABASE_URL)
	@rm -rf $(TESTLOG) && mkdir -p $(TESTLOG)
	@failed=(); for m in $(MODULES); do \
	  $(MAKE) --no-print-directory test/$$m TESTTAGS='$(TESTTAGS)' || failed+=("$$m"); \
	done; \
	echo "== slowest $(TESTTOP) test packages"; \
	cat $(TESTLOG)/*.txt 2>/dev/null | awk '$$1 ~ /^(ok|FAIL)$$/ && $$3 ~ /s$$/ { t = $$3; sub(/s$$/, "", t); printf "%9.2fs  %-4s %s\n", t, $$1, $$2 }' | sort -rn | awk -v n=$(TESTTOP) 'NR <= n'; \
	if [ $${#failed[@]} -gt 0 ]; then echo "== FAILED modules: $${failed[*]} (output in $(TESTLOG)/)"; exit 1; fi; \
	echo "== every module passed"

# test/<module>: one module's tests with -race (its output also in $(TESTLOG)).
test/%:
	@mkdir -p $(TESTLOG)
	@echo "== test $*"
	cd $* && $(GO) test -race -count=1 -timeout $(TESTTIMEOUT) $(if $(TESTTAGS),-tags $(TESTTAGS)) ./... 2>&1 | tee $(TESTLOG)/$(subst /,_,$*).txt

.PHONY: test-long
test-long: ## make test with -tags long: the long variants of the randomised suites too
	$(MAKE) --no-print-directory test TESTTAGS=long

.PHONY: lint
lint: fmt-check $(addprefix lint/,$(MODULES)) deps-check actionlint ## gofmt check, go vet, staticcheck, light-module dependency check, actionlint

.PHONY: fmt-check
fmt-check:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

lint/%:
	@echo "== lint $*"
	cd $* && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

# Windows, built here and run under Wine (scripts/wine: Debian's Wine 8 and
# MinGW, a ProcessPrng DLL and a go test overlay; Wine keeps no ACLs, so the
# tests that need them skip there and run on a real Windows runner).
WINDOWS_ARCHES ?= amd64 arm64
export OPENPROGRAM_WINE_DIR ?= $(HOME)/.cache/openprogram-wine
# Packages left out under Wine: they drive npm clients, PostgreSQL or a
# Unix shell harness (see scripts/wine/README.md).
WINE_EXCLUDE ?= /e2e|/perf$$|/pgtest$$|/postgres$$
WINE_TIMEOUT ?= 30m

.PHONY: vet-windows
vet-windows: ## go vet every module for windows/amd64 and windows/arm64
	@for m in $(MODULES); do for a in $(WINDOWS_ARCHES); do \
	  echo "== vet $$m windows/$$a"; (cd $$m && GOOS=windows GOARCH=$$a CGO_ENABLED=0 $(GO) vet ./...) || exit 1; \
	done; done

.PHONY: wine-setup
wine-setup: ## install Wine and MinGW (apt) and prepare the Wine prefix in $(OPENPROGRAM_WINE_DIR)
	./scripts/wine/setup "$(OPENPROGRAM_WINE_DIR)"

.PHONY: test-windows
test-windows: wine-setup $(addprefix test-windows/,$(MODULES)) ## every module's tests as windows/amd64 binaries under Wine (WINE_EXCLUDE left out)

test-windows/%:
	@echo "== test $* (windows/amd64 under Wine)"
	cd $* && pkgs=$$(GOOS=windows $(GO) list ./... | grep -Ev '$(WINE_EXCLUDE)') && \
	  GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) test -count=1 -timeout $(WINE_TIMEOUT) \
	    -overlay="$(OPENPROGRAM_WINE_DIR)/overlay.json" -exec "$(CURDIR)/scripts/wine/exec" $$pkgs

.PHONY: test-windows-binary
test-windows-binary: wine-setup ## openprogram.exe under Wine: token, serve, install for four clients, doctor (cli/e2e/winebin)
	cd cli && OPENPROGRAM_WINE_E2E=1 $(GO) test -count=1 -timeout $(WINE_TIMEOUT) ./e2e/winebin/

.PHONY: actionlint
actionlint: ## check the GitHub workflows (actionlint, pinned)
	$(GO) run $(ACTIONLINT) .github/workflows/*.yml

.PHONY: deps-check
deps-check:
	@for m in $(filter $(LIGHT_MODULES),$(MODULES)); do \
	  heavy=$$(cd $$m && $(GO) list -deps -test ./... | grep -E '$(HEAVY_DEPS)' || true); \
	  if [ -n "$$heavy" ]; then echo "$$m pulls heavy dependencies:"; echo "$$heavy"; exit 1; fi; \
	done

.PHONY: bench
bench: $(addprefix bench/,$(MODULES)) ## run every module's benchmarks into bench/<module>.txt (compare with benchstat)

bench/%:
	@mkdir -p $(CURDIR)/bench
	@echo "== bench $* -> bench/$(subst /,_,$*).txt"
	cd $* && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./... | tee $(CURDIR)/bench/$(subst /,_,$*).txt
	$(GO) run $(BENCHSTAT) $(CURDIR)/bench/$(subst /,_,$*).txt

# The scale harness (cli/perf/scale_test.go): N real `mcp serve` processes on
# one PostgreSQL, direct and through a PgBouncer it starts. Point it at a
# server of your own: OPENPROGRAM_SCALE_DATABASE_URL=postgres://... make bench-scale
SCALE_DIRECT  ?= 40,60,100
SCALE_BOUNCER ?= 200,300
SCALE_LIMIT   ?= -1
SCALE_IDLE    ?= 60s

.PHONY: bench-scale
bench-scale: ## scale harness: N mcp serve processes on one PostgreSQL, direct and through PgBouncer (OPENPROGRAM_SCALE_DATABASE_URL)
	@[ -n "$$OPENPROGRAM_SCALE_DATABASE_URL" ] || { echo "bench-scale: set OPENPROGRAM_SCALE_DATABASE_URL to a PostgreSQL server of your own (the load is real)"; exit 2; }
	cd cli && $(GO) test -count=1 -run '^TestScale$$' -v -timeout 60m ./perf/ -args \
	  -scale.direct $(SCALE_DIRECT) -scale.bouncer $(SCALE_BOUNCER) -scale.limit $(SCALE_LIMIT) -scale.idle $(SCALE_IDLE) -scale.strict=false

# Whole-process start-up against the floor (a bare go-sdk server with one
# tool, cli/perf/testdata/floor), paired run by run: wall, CPU and peak RSS,
# ours / floor (cli/perf BenchmarkStartupFloor).
STARTUP_COUNT ?= 30

.PHONY: bench-startup
bench-startup: ## start-up of mcp serve against a bare go-sdk server: wall, CPU and peak RSS, ours / floor
	cd cli && $(GO) test -count=1 -run '^$$' -bench '^BenchmarkStartupFloor$$' -benchtime $(STARTUP_COUNT)x ./perf/

# The flood: 16 MiB lines pipelined into one server (PIPELINE_LINES of them).
PIPELINE_LINES ?= 100

.PHONY: bench-flood
bench-flood: ## pipeline PIPELINE_LINES lines of 16 MiB into one mcp serve: time and peak RSS (cli/perf BenchmarkPipelinedBigLines)
	cd cli && $(GO) test -count=1 -run '^$$' -bench '^BenchmarkPipelinedBigLines$$' -benchtime 1x -timeout 60m ./perf/ -args -pipeline.lines $(PIPELINE_LINES)

.PHONY: tidy
tidy: $(addprefix tidy/,$(MODULES)) ## go mod tidy in every module

tidy/%:
	cd $* && $(GO) mod tidy

.PHONY: build
build: ## build ./bin/openprogram (needs the cli module)
	@if [ ! -d cli ]; then echo "build: the cli module does not exist yet"; exit 1; fi
	cd cli && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(CURDIR)/bin/openprogram ./cmd/openprogram

# make dist: per platform an archive (binary, README, LICENSE, docs/, man page,
# completions), an MCP bundle (.mcpb, packed and validated by the mcpb CLI
# pinned in packaging/package-lock.json) and a CycloneDX SBOM; then server.json
# for the MCP registry and SHA256SUMS over all of it. The platforms build in
# parallel (DIST_JOBS, default: the number of CPUs); packaging/dist.sh does
# each step, and the end-to-end tests run the same steps for the host.
DIST        := $(CURDIR)/dist
DIST_SH     := ./packaging/dist.sh
DIST_JOBS   ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
# The version in manifest.json and server.json: the tag without its v, or
# 0.0.0-dev.<commit> for an untagged build.
DIST_SEMVER ?= $(or $(shell echo '$(VERSION)' | sed -nE 's/^v?([0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?)$$/\1/p'),0.0.0-dev.g$(COMMIT))
DIST_NAMES  := $(foreach p,$(DIST_PLATFORMS),openprogram_$(subst /,_,$(p)))

.PHONY: dist
dist: ## archives, MCP bundles (.mcpb), SBOMs, server.json and SHA256SUMS in dist/ (linux, darwin, windows × amd64, arm64; no cgo)
	@if [ ! -d cli ]; then echo "dist: the cli module does not exist yet"; exit 1; fi
	@echo "== dist $(VERSION) ($(COMMIT)), bundle version $(DIST_SEMVER): $(DIST_PLATFORMS), $(DIST_JOBS) at a time"
	rm -rf $(DIST) && mkdir -p $(DIST)/.build
	$(MAKE) --no-print-directory dist-tools
	$(MAKE) --no-print-directory -j$(DIST_JOBS) $(addprefix dist-platform/,$(DIST_NAMES))
	$(DIST_SH) server-json $(DIST_SEMVER) $(VERSION) $(DIST)
	$(DIST_SH) sums $(DIST)
	rm -rf $(DIST)/.build
	@cat $(DIST)/SHA256SUMS
	@ls -l $(DIST)

# What every platform needs first: the mcpb CLI from the lock file, and the
# man page and completions, generated by a host build (a cross-compiled binary
# cannot run here).
.PHONY: dist-tools
dist-tools: packaging/node_modules/.package-lock.json
	@echo "== dist host build for the man page and completions"
	cd cli && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/.build/host/openprogram ./cmd/openprogram
	$(DIST_SH) extras $(DIST)/.build/host/openprogram $(DIST)/.build/extras

packaging/node_modules/.package-lock.json: packaging/package-lock.json
	@echo "== npm ci in packaging/ (the pinned mcpb CLI)"
	cd packaging && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error

dist-platform/openprogram_%:
	@os=$$(echo '$*' | cut -d_ -f1); arch=$$(echo '$*' | cut -d_ -f2); bin=$(DIST)/.build/$*/openprogram; \
	  echo "== dist $$os/$$arch: build"; \
	  (cd cli && CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $$bin ./cmd/openprogram) && \
	  $(DIST_SH) archive $$bin $$os $$arch $(DIST)/.build/extras $(DIST) && \
	  $(DIST_SH) mcpb $$bin $$os $$arch $(DIST_SEMVER) $(DIST) && \
	  $(DIST_SH) sbom $$bin $$os $$arch $(VERSION) $(DIST) && \
	  echo "== dist $$os/$$arch: done"

.PHONY: run
run: ## the main job: a fresh state dir, a token, and a real MCP client driving `openprogram mcp serve`
	@echo "== make run: building bin/openprogram and the demo client (a first build downloads and compiles modules, ~1-3 min; later runs take seconds)"
	@$(MAKE) --no-print-directory build
	./scripts/run-demo.sh

.PHONY: release
release: ## tag a module release: make release MODULE=sessions VERSION=v0.2.0
	@[ -n "$(MODULE)" ] && [ -n "$(VERSION)" ] || { echo "usage: make release MODULE=<module> VERSION=vX.Y.Z"; exit 2; }
	@printf '%s\n' $(MODULES) | grep -qx '$(MODULE)' || { echo "release: $(MODULE) is not a module listed in go.work"; exit 2; }
	@echo '$(VERSION)' | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$' || { echo "release: VERSION must look like v1.2.3"; exit 2; }
	@[ -z "$$(git status --porcelain)" ] || { echo "release: the working tree is dirty; commit or stash first"; exit 1; }
	@! git rev-parse -q --verify 'refs/tags/$(MODULE)/$(VERSION)' >/dev/null || { echo "release: tag $(MODULE)/$(VERSION) already exists"; exit 1; }
	git tag -a '$(MODULE)/$(VERSION)' -m '$(MODULE) $(VERSION)'
	@echo "tagged $(MODULE)/$(VERSION); push it with: git push origin $(MODULE)/$(VERSION)"
