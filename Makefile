# The README's commands. `make test` is what CI runs (.ci/run).
GO ?= go

.PHONY: test vet fmt-check build bench example

build:
	$(GO) build ./...

# The whole test suite: formatting, vet, and every package under the race
# detector (goroutine leaks are checked by goleak inside the packages).
test: fmt-check vet
	$(GO) test -race -count=1 ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Benchmarks quoted in docs/benchmarks.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./internal/...

# Runs the Lua-only example; it needs no gateway.
example:
	$(GO) run ./cmd/promptforge-mcp-server run examples/prompts/text_stats.md "hello world"
