# The README's commands. `make test` is what CI runs (.ci/run).
GO ?= go

.PHONY: test vet fmt-check build bench example

build:
	$(GO) build ./...

# The whole test suite: formatting, vet, every package under the race
# detector (goroutine leaks are checked by goleak inside the packages), a
# bounded fuzz of web_fetch's URL admission, and the end-to-end suites.
test: fmt-check vet
	$(GO) test -race -count=1 ./...
	$(MAKE) fuzz-smoke
	$(MAKE) e2e

# A short fuzz run over web_fetch's URL forms: no input may reach a blocked
# address. The corpus in internal/tools/testdata/fuzz keeps past findings.
.PHONY: fuzz-smoke
fuzz-smoke:
	$(GO) test -run '^$$' -fuzz '^FuzzAdmitURL$$' -fuzztime 20s ./internal/tools/

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './test/e2e/node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Benchmarks quoted in docs/benchmarks.md, side by side in one run.
BENCH_COUNT ?= 5
bench:
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -bench 'Parse200Lines' ./internal/prompt/
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -bench 'ParseAndRunLua|RunLua$$|RunOneTurn|LoopbackFloor|FanoutPerArm' ./internal/engine/
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -bench 'RunPrompt|ConstTool|ListPromptsPage|RunsInFlight' ./internal/server/
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -benchtime 5x -bench 'Resolve10k|ReloadOneSaved' ./internal/catalog/
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -bench 'LaunchSettle|HeldRunsMemory' ./internal/runs/
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -bench 'Tracing' ./internal/runtrace/

# Runs the Lua-only example; it needs no gateway.
example:
	$(GO) run ./cmd/promptforge-mcp-server run examples/prompts/text_stats.md "hello world"

# The end-to-end suites in test/e2e: the official TypeScript MCP client
# against the built binary over stdio and streamable HTTP (Node 20), then
# the MCP conformance suite's server scenarios in the 2026-07-28 and
# 2025-11-25 protocol eras (Node 22 from npm), then the third-party clients
# (the MCP Inspector CLI, long runs past the SDK client's timeout). npm ci
# runs when test/e2e has no node_modules yet.
.PHONY: e2e
e2e:
	@test -d test/e2e/node_modules || (cd test/e2e && npm ci --no-audit --no-fund)
	cd test/e2e && GO="$(GO)" npm test
	cd test/e2e && node --test --test-timeout=120000 $(E2E_CLIENTS)

# Client tests kept out of package.json's scripts (so its only change is a
# devDependency); the binaries come from npm test's pretest build above.
E2E_CLIENTS = inspector.test.mjs timeout.test.mjs
