# harnessd — build, test, demo, benchmarks.
#
#   make demo    a full episode against the built-in test harness and demo tools
#   make lint    go vet, gofmt, staticcheck
#   make test    lint + every test (race detector on but for NORACE_TESTS and E2E_PKGS); CI runs this
#   make bench   benchmarks with their floors, as ratios (see docs/benchmarks.md)
#   make bench-agents  the real agents' resets (needs Node and make agents)
#   make fuzz    every fuzz target for FUZZTIME each (default 60s)
#   make agents  install the real CLI agents pinned in integration/agents (npm ci; needs Node)
#   make chromium  install Debian's chromium for the web console's browser test
#                (only with CI=true or INSTALL_CHROMIUM=1, as root with apt-get)
#   make python-deps  install Debian's python3-websockets, -pytest, -mypy for the
#                Python client's tests (only with CI=true or INSTALL_PYTHON_DEPS=1, as root)
#   make test-python  the Python client's tests (python/tests, pytest, real daemons)
#   make xfsprogs  install Debian's xfsprogs for the snapshot tests' reflink file system
#                (only with CI=true or INSTALL_XFSPROGS=1, as root with apt-get)

GO      ?= go
BIN     := $(CURDIR)/bin
PKGS    := ./...
# The release harnessd reports (docs/deploy.md, "Cutting a release"): the
# tag vX.Y.Z of the commit built, or git describe's vX.Y.Z-N-gCOMMIT after
# it (harnessd version shows vX.Y.(Z+1)-dev.N+COMMIT); empty before any tag.
VERSION  ?= $(shell git describe --tags --match 'v[0-9]*.[0-9]*.[0-9]*' --dirty 2>/dev/null)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED ?= $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo true)
VERSIONPKG := github.com/harnessd/harnessd/internal/version
LDFLAGS  := $(if $(VERSION),-X $(VERSIONPKG).version=$(VERSION)) $(if $(REVISION),-X $(VERSIONPKG).revision=$(REVISION)) $(if $(MODIFIED),-X $(VERSIONPKG).modified=true)

.PHONY: all build sandbox-init test test-go vet lint tracked pkgsize pkgdoc demo bench bench-agents clean agents chromium fuzz fuzz-smoke python-deps test-python bench-python xfsprogs

all: build

# The sandbox's init is a small program of its own (cmd/harnessd-sandbox-init),
# built first and embedded in harnessd (build tag harnessd_embedinit), so a
# sandbox's start does not pay for the daemon's package initialisation; a
# harnessd built without the tag (go build, go test) re-executes itself.
SANDBOXINIT := process/sandbox/initfile/harnessd-sandbox-init

# harnessd is built with -buildvcs=auto (overriding a GOFLAGS of
# -buildvcs=false) so that "harnessd version" names the git revision it was
# built from (a git worktree's too); outside a git checkout (a tarball) it
# says unknown.
build: sandbox-init
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./testharness/cmd/testharness ./integration/benchfloor
	@if [ -d cmd/harnessd ]; then $(GO) build -tags harnessd_embedinit -buildvcs=auto -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/harnessd; fi

sandbox-init:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(SANDBOXINIT) ./cmd/harnessd-sandbox-init

vet:
	$(GO) vet $(PKGS)

# lint: go vet, gofmt and staticcheck (honnef.co/go/tools, pinned in go.mod
# as a tool dependency, so "go tool staticcheck" needs no separate install).
lint: vet tracked pkgsize pkgdoc
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) tool staticcheck $(PKGS)

# pkgsize: no package directory above 3,000 non-test lines of Go, unless
# its package doc says why it must be bigger ("bigger than 3,000 lines").
pkgsize:
	@bad=$$(for d in $$(git ls-files '*.go' | xargs -n1 dirname | sort -u); do \
		n=$$(ls $$d/*.go | grep -v '_test\.go$$' | xargs cat 2>/dev/null | wc -l); \
		if [ "$$n" -gt 3000 ] && ! grep -qs 'bigger than 3,000 lines' $$d/*.go; then echo "$$d: $$n lines"; fi; \
	done); if [ -n "$$bad" ]; then echo "package directories above 3,000 non-test lines (split them, or say why in the package doc):"; echo "$$bad"; exit 1; fi

# pkgdoc: every package has a package doc (saying what it owns and must
# not touch, as DESIGN.md's package map does).
pkgdoc:
	@bad=$$($(GO) list -f '{{if not .Doc}}{{.ImportPath}}{{end}}' $(PKGS)); \
	if [ -n "$$bad" ]; then echo "packages without a package doc (say what the package owns and must not touch):"; echo "$$bad"; exit 1; fi

# tracked: no build output in git. Fails when a tracked file is an ELF
# binary or larger than 2 MB (lock files aside).
tracked:
	@bad=$$(git ls-files | while IFS= read -r f; do \
		[ -f "$$f" ] || continue; \
		case "$$f" in *package-lock.json|*go.sum) continue;; esac; \
		if [ "$$(head -c 4 "$$f" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then echo "$$f (an ELF binary)"; \
		elif [ "$$(stat -c %s "$$f")" -gt 2000000 ]; then echo "$$f (over 2 MB)"; fi; \
	done); if [ -n "$$bad" ]; then echo "tracked files that are build outputs or too large (git rm --cached them and ignore them):"; echo "$$bad"; exit 1; fi

test: lint build agents chromium python-deps xfsprogs test-go test-python fuzz-smoke

# GORACE atexit_sleep_ms=0: a race-instrumented program sleeps a second at
# each exit with status 0 (the default 1000 ms), every test binary and each
# one a test re-executes as a child included. A race is reported when it
# happens, failing its test; the sleep only waits for late reports.
#
# The test binaries embed the small sandbox init (-tags harnessd_embedinit),
# as the harnessd users run does: without it each sandbox a test starts
# re-executes the race-instrumented test binary as its init, about 0.2 s of
# CPU a start (session's tests: 99 s of CPU with it, 64 s without). go test
# without the tag still covers the re-executed init.
#
# NORACE_TESTS run without the race detector, in a pass of their own over
# the packages that define them (found by name, so each test is in exactly
# one pass): tests of how much memory megabytes of data hold, whose every
# byte copied costs about 20x under the race detector and which find no
# race the other tests of that code do not (146 s under it for
# TestConsoleBoundsATurnWindowByBytes, 7 s without; the first five: 218 s, 12 s).
NORACE_TESTS := TestConsoleBoundsATurnWindowByBytes TestHarnessAndMCPParsingAllocateInProportionToTheFrame \
	TestFrameParsingAllocatesInProportionToTheFrame TestWebFeedBoundsAViewerByBytes TestForkBranchesOverTenThousand \
	TestAModelUsersConversationIsBounded
empty :=
space := $(empty) $(empty)
NORACE_RE   := ^($(subst $(space),|,$(strip $(NORACE_TESTS))))$$
NORACE_PKGS  = $(shell for t in $(NORACE_TESTS); do grep -rlw --include='*_test.go' --exclude-dir=node_modules "^func $$t" .; done | xargs -n1 dirname | sort -u)

# The end-to-end packages (E2E_PKGS) run without the race detector too,
# whole, in a pass of their own: their tests start bin/harnessd, the test
# agent and the real agents as processes of their own, built without it,
# so under it the detector watched only the tests' client code, for a
# quarter more CPU (integration: 108 s of CPU under it, 84 s without;
# integration/agents: 138 s, 105 s). The daemon's code runs under the
# detector in its own packages' tests.
E2E_PKGS  := ./integration/...
RACE_PKGS  = $(shell $(GO) list $(PKGS) | grep -v -e '/integration$$' -e '/integration/')

test-go: sandbox-init
	@echo "go test -race -tags harnessd_embedinit -timeout 15m -skip '$(NORACE_RE)' (every package but $(E2E_PKGS))"
	@HARNESSD_BIN_DIR=$(BIN) GORACE=atexit_sleep_ms=0 $(GO) test -race -tags harnessd_embedinit -timeout 15m -skip '$(NORACE_RE)' $(RACE_PKGS)
	HARNESSD_BIN_DIR=$(BIN) $(GO) test -tags harnessd_embedinit -timeout 10m -run '$(NORACE_RE)' $(NORACE_PKGS)
	HARNESSD_BIN_DIR=$(BIN) $(GO) test -tags harnessd_embedinit -timeout 15m $(E2E_PKGS)

# Fuzz targets of every decoder facing untrusted bytes, as package:target.
# go test runs their seed corpora and testdata/fuzz/ regressions anyway;
# fuzz-smoke (part of make test) fuzzes each for FUZZSMOKE, make fuzz for
# FUZZTIME. Minimizing a new input is capped, so a run spends its time
# fuzzing. A crasher is written to the package's testdata/fuzz/FuzzX/:
# commit it with the fix, and it stays a regression test.
FUZZ_TARGETS := \
	./wire:FuzzEventDecode ./wire:FuzzObjectKeys \
	./server:FuzzWSFrame ./server:FuzzHarnessFrame ./server:FuzzHTTPBody ./server:FuzzMCPRequest \
	./config:FuzzParseConfig ./harness/adapter/jsonl:FuzzLine ./harness/adapter/acp:FuzzMessage ./harness/adapter/acp:FuzzContentTexts \
	./harness/adapter/streamjson:FuzzStreamJSON ./harness/adapter/streamjson:FuzzInitLists ./harness/adapter/streamjson:FuzzBlocks \
	./harness/adapter/oneshot:FuzzFormats ./bridge:FuzzRequest \
	./gateway:FuzzDecode ./gateway:FuzzURLScanAgreesWithTokens ./gateway/dialect:FuzzMatch ./gateway/dialect:FuzzGeminiLists ./gateway/dialect:FuzzDialectLists \
	./internal/jsonscan:FuzzStringValue ./internal/jsonlist:FuzzReadOver ./internal/jsonshape:FuzzReplaceLoneSurrogates
FUZZTIME  ?= 60s
# The smoke run counts executions rather than seconds: a time-bounded go
# fuzz run can end with a spurious "context deadline exceeded" failure when
# its deadline falls while a worker is minimizing a new input, which made
# CI flaky; an execution count has no deadline.
FUZZSMOKE ?= 1000x

fuzz: build
	@$(MAKE) --no-print-directory fuzz-run FUZZFOR=$(FUZZTIME)

fuzz-smoke: build
	@$(MAKE) --no-print-directory fuzz-run FUZZFOR=$(FUZZSMOKE)

# fuzz-run builds each package's fuzzing test binary once (go test -c
# -fuzz), then runs each of its targets from the package's directory, with
# go test's corpus cache: one build and link a package, not one a target.
fuzz-run:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; cache=$$($(GO) env GOCACHE)/fuzz; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; bin=$$tmp/$$(echo "$$pkg" | tr ./ __).test; corpus=$$cache/$$($(GO) list $$pkg); \
		[ -x "$$bin" ] || $(GO) test -c -o "$$bin" -fuzz "^$$name\$$" $$pkg; \
		echo "fuzz $$pkg $$name ($(FUZZFOR))"; \
		(cd $$pkg && HARNESSD_BIN_DIR=$(BIN) "$$bin" -test.run '^$$' -test.fuzz "^$$name\$$" -test.fuzztime $(FUZZFOR) \
			-test.fuzzminimizetime 5s -test.fuzzcachedir "$$corpus"); \
	done

# The real agents of integration/agents: installed with npm ci when node and
# npm are on PATH, and again only when package.json or package-lock.json
# change. Install scripts are off except Claude Code's and OpenCode's, which
# copy the native binary of their platform package over a stub (nothing is
# downloaded). Without Node the real-agent tests skip, and fail with CI=true.
AGENTS_DIR   := integration/agents
AGENTS_STAMP := $(AGENTS_DIR)/node_modules/.harnessd-installed

agents:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(AGENTS_STAMP); \
	else \
		echo "make agents: node and npm are not on PATH; not installing the real agents (their tests skip, and fail with CI=true)"; \
	fi

$(AGENTS_STAMP): $(AGENTS_DIR)/package.json $(AGENTS_DIR)/package-lock.json
	cd $(AGENTS_DIR) && npm ci --ignore-scripts --no-audit --no-fund && npm rebuild @anthropic-ai/claude-code opencode-ai
	@touch $@

# debian_install installs Debian packages a test needs, only when missing
# and asked for: under CI=true or with the opt-in variable set to 1, as
# root with apt-get; never silently on a developer's machine. Arguments:
# the target's name, a shell test that they are present, the opt-in
# variable, the packages, what fails under CI=true without them, what
# skips without them (no commas in any argument).
define debian_install
	@if $(2); then \
		:; \
	elif [ "$$CI" = true ] || [ "$($(3))" = 1 ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "make $(1): installing Debian's $(4) (apt-get)"; \
			export DEBIAN_FRONTEND=noninteractive; \
			apt-get install -y --no-install-recommends $(4) || \
				{ apt-get update && apt-get install -y --no-install-recommends $(4); }; \
		else \
			echo "make $(1): $(4) missing and cannot be installed here (needs root and apt-get); $(5) under CI=true"; \
		fi; \
	else \
		echo "make $(1): $(4) not installed; $(6) ($(3)=1 make $(1) installs it)"; \
	fi
endef

# chromium drives the web console's browser test (server/webbrowser_test.go,
# through chromedp).
chromium:
	$(call debian_install,chromium,command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1,INSTALL_CHROMIUM,chromium,the browser test fails,the web console's browser test skips)

# xfsprogs (mkfs.xfs) lets the episode snapshot tests make an xfs loop file
# system with reflinks (episode.TestSnapshotReflinks, BenchmarkSnapshot's
# xfs-reflink rows): this host's ext4 has none.
xfsprogs:
	$(call debian_install,xfsprogs,command -v mkfs.xfs >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.xfs ] || [ -x /sbin/mkfs.xfs ],INSTALL_XFSPROGS,xfsprogs,the reflink tests fail,the reflink snapshot tests skip)

# The Python client (python/, package harnessd) is tested with Debian's
# interpreter, /usr/bin/python3, whatever python3 PATH finds (a pyenv shim
# lacks Debian's packages): it needs python3-websockets (10.4) and
# python3-pytest, and python3-mypy for its type check (which skips without
# it, and fails under CI=true). Without them test-python says so and skips;
# under CI=true it fails.
PYTHON ?= /usr/bin/python3
PYTHON_DEBS := python3-websockets python3-pytest python3-mypy
python-deps:
	$(call debian_install,python-deps,$(PYTHON) -c 'import websockets; import pytest; import mypy' >/dev/null 2>&1,INSTALL_PYTHON_DEPS,$(PYTHON_DEBS),test-python fails,the Python client's tests skip)

# test-python runs python/tests against real daemons (bin/harnessd serve and
# bin/testharness llm --engine subprocesses on 127.0.0.1), the package
# imported from python/src, not installed.
test-python: build
	@if [ ! -x $(PYTHON) ]; then \
		if [ "$$CI" = true ]; then echo "make test-python: $(PYTHON) is missing (CI=true: failing)"; exit 1; fi; \
		echo "make test-python: $(PYTHON) is missing; skipping the Python client's tests"; \
	elif ! $(PYTHON) -c 'import websockets, pytest' >/dev/null 2>&1; then \
		if [ "$$CI" = true ]; then echo "make test-python: $(PYTHON) lacks $(PYTHON_DEBS) (CI=true: failing; make python-deps installs them)"; exit 1; fi; \
		echo "make test-python: $(PYTHON) lacks $(PYTHON_DEBS); skipping the Python client's tests (INSTALL_PYTHON_DEPS=1 make python-deps)"; \
	else \
		cd python && HARNESSD_BIN_DIR=$(BIN) PYTHONPATH=src PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m pytest -p no:cacheprovider -q tests; \
	fi

demo: build
	@$(GO) run ./demo -bin $(BIN)

# Benchmarks report ratios against floors measured in the same run; the
# BENCH lines (collected at the end, and in bin/bench.txt) are what
# docs/benchmarks.md is written from.
BENCHENV := HARNESSD_BIN_DIR=$(BIN)
bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -c
bench: build
	@rm -f $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench . -benchtime 30x ./process/ ./bridge/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench 'GatewayCall' -benchtime 300x ./gateway/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench 'GatewayMemory' -benchtime 1x ./gateway/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench 'GatewayGrowing|CaptureGrowing' -benchtime 1x ./gateway/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench 'GatewayReplay' -benchtime 1x ./gateway/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench 'PassthroughGuard' -count 3 ./gateway/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench 'Accept' -benchtime 1x ./server/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench 'ForkSurfaces' -benchtime 1x ./server/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench 'SandboxStart' -benchtime 1x ./process/sandbox/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkTurn$$' -benchtime 1000x ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkTurnScale$$' -benchtime 16x ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkObservationFrames$$' -benchtime 1x ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^Benchmark(Reset|BridgeStart)$$' -benchtime 100x ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkBridgedToolCall$$' -benchtime 300x ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkConnect$$' -benchtime 1x -timeout 20m ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkResetThroughput$$' -benchtime 30x ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkResetIsolation$$' -benchtime 60x ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkResetStandbyBackToBack$$' -benchtime 60x ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^Benchmark(Scale|IdleMemory1024|IdleSessionMemory|ConcurrentSessions)$$' -benchtime 1x -timeout 20m ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench 'Soak' -benchtime 1x -timeout 30m ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkLongEpisodeMemory$$' -benchtime 1x -timeout 30m ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkFork$$' -benchtime 1x -timeout 30m ./integration/ | tee -a $(BIN)/bench.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench '^BenchmarkEvalOracleThroughput$$' -benchtime 1x -timeout 20m ./evaljob/ | tee -a $(BIN)/bench.txt
	@if $(PYTHON) -c 'import websockets' 2>/dev/null; then $(MAKE) --no-print-directory bench-python; else echo "bench-python: skipped: $(PYTHON) has no websockets (make python-deps)"; fi
	@echo; echo "== BENCH lines (bin/bench.txt) =="; grep '^BENCH ' $(BIN)/bench.txt
	@echo; echo "== summary (median of 3 repeats, spread min–max) =="; $(GO) run ./integration/benchsummary $(BIN)/bench.txt

# bench-python: episodes per second through the Python client's Pool vs
# the Go client over 1, 2 and 4 local daemons (python/bench/bench_pool.py;
# needs python3-websockets: make python-deps). Also run by make bench.
# Then a group of 8 started by ForkGroup vs ResetGroup
# (python/bench/bench_fork.py).
bench-python: build
	$(PYTHON) python/bench/bench_pool.py --bin $(BIN) | tee $(BIN)/bench-python.txt
	$(PYTHON) python/bench/bench_fork.py --bin $(BIN) | tee -a $(BIN)/bench-python.txt

# bench-agents: the reset of every real agent preset that integration/agents
# can start against the fake LLM (needs Node and `make agents`).
bench-agents: SHELL := /bin/bash
bench-agents: .SHELLFLAGS := -o pipefail -c
bench-agents: build agents
	@rm -f $(BIN)/bench-agents.txt
	$(BENCHENV) $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./integration/agents/ | tee -a $(BIN)/bench-agents.txt
	@echo; echo "== summary (median of 3 repeats, spread min–max) =="; $(GO) run ./integration/benchsummary $(BIN)/bench-agents.txt

clean:
	rm -rf $(BIN) $(SANDBOXINIT)
