# harnessd — build, test, demo, benchmarks.
#
#   make demo    a full episode against the built-in test harness and demo tools
#   make test    vet + every test (race detector on); CI runs this
#   make bench   benchmarks with their floors, as ratios (see docs/benchmarks.md)

GO      ?= go
BIN     := $(CURDIR)/bin
PKGS    := ./...

.PHONY: all build test test-go vet lint demo bench clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./testharness/cmd/testharness
	@if [ -d cmd/harnessd ]; then $(GO) build -o $(BIN)/ ./cmd/harnessd; fi

vet:
	$(GO) vet $(PKGS)

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: lint build test-go

test-go:
	HARNESSD_BIN_DIR=$(BIN) $(GO) test -race -timeout 15m $(PKGS)

demo: build
	@$(GO) run ./demo -bin $(BIN)

bench: build
	HARNESSD_BIN_DIR=$(BIN) $(GO) test -run '^$$' -bench . -benchtime 30x ./process/

clean:
	rm -rf $(BIN)
