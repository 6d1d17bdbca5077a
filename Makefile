# The README's commands. `make test` is what CI runs (.ci/run).
GO ?= go

.PHONY: test vet fmt-check build bench example

build:
	$(GO) build ./...

# The whole test suite: formatting, vet, every package under the race
# detector (goroutine leaks are checked by goleak inside the packages), a
# bounded fuzz of each fuzz target (fuzz-smoke), and the end-to-end suites.
test: fmt-check vet
	$(GO) test -race -count=1 ./...
	$(MAKE) prompt-tests
	$(MAKE) fuzz-smoke
	$(MAKE) e2e

# The example prompts' own tests (examples/prompts/*.test.yaml), run the
# way an author runs them: through the command, on its in-process
# scripted gateway (docs/testing-prompts.md). No model, no network.
.PHONY: prompt-tests
prompt-tests:
	$(GO) run ./cmd/promptforge-mcp-server test examples/

# A short fuzz run of each target, through test/fuzz-once.sh (which runs a
# target once more after Go 1.26's fuzztime deadline race). First
# web_fetch's URL forms: no input may reach a blocked address; the corpus
# in internal/tools/testdata/fuzz keeps past findings. Then stdio framing
# and JSON-RPC ids: every line passed to the SDK is one it decodes and
# answers under the same id; every other line is refused.
.PHONY: fuzz-smoke
fuzz-smoke:
	GO=$(GO) ./test/fuzz-once.sh ./internal/tools/ FuzzAdmitURL 20s
	# The config loader (prompts.toml and prompts.env): no panic, every
	# failure a described *config.Error, every success within its limits.
	GO=$(GO) ./test/fuzz-once.sh ./internal/config/ FuzzLoad 15s
	GO=$(GO) ./test/fuzz-once.sh ./internal/server/transport/ FuzzStdioFraming 15s
	GO=$(GO) ./test/fuzz-once.sh ./internal/server/transport/ FuzzJSONRPCID 15s
	# A 2026-07-28 tools/call the transport answers itself gets the SDK's answer.
	GO=$(GO) ./test/fuzz-once.sh ./internal/server/transport/ FuzzStatelessCallsAnswerAsTheSDK 15s
	# A stateful tools/call the transport answers itself gets the SDK's answer.
	GO=$(GO) ./test/fuzz-once.sh ./internal/server/transport/ FuzzStatefulCallsAnswerAsTheSDK 15s
	# The one scan of a POST body answers every /mcp layer as its own scan did,
	# and its validity check (also the stdio line check's) judges every body as
	# json.Valid does.
	GO=$(GO) ./test/fuzz-once.sh ./internal/server/transport/ FuzzBodyViewAnswersAsEachLayer 15s
	GO=$(GO) ./test/fuzz-once.sh ./internal/server/transport/ FuzzValidJSON 15s
	# The stderr log handler writes exactly what slog.TextHandler writes.
	GO=$(GO) ./test/fuzz-once.sh ./internal/logtext/ FuzzHandlerMatchesText 10s
	# A VM on a reused Lua state observes what a VM on a new one does,
	# whatever random chunk the state's last VM ran (internal/luavm pool.go).
	GO=$(GO) ./test/fuzz-once.sh ./internal/luavm/ FuzzReusedStateIsFresh 15s

# The bounded chaos test alone (it also runs in `test`): a few thousand
# calls with random cancels, dropped connections and gateway faults, then
# no run, slot, call or goroutine may be left behind.
.PHONY: chaos
chaos:
	$(GO) test -race -count=1 -run '^TestChaosLeavesNothingBehind$$' -v ./internal/server/transport/

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
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -bench 'NewVM|RunChunk|LuaLoops' ./internal/luavm/
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -bench 'RunPrompt|ConstTool|ListPromptsPage|RunsInFlight' ./internal/server/
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -benchtime 5x -bench 'Resolve10k|ReloadOneSaved' ./internal/catalog/
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -bench 'LaunchSettle|HeldRunsMemory' ./internal/runs/
	$(GO) test -run '^$$' -count $(BENCH_COUNT) -benchtime 2000x -bench 'RunPromptStore|CheckRunStore' ./test/replicas/
	$(GO) test -run '^$$' -benchmem -count $(BENCH_COUNT) -bench 'Tracing' ./internal/runtrace/
	$(MAKE) bench-e2e

# The end-to-end benchmark (test/bench, docs/benchmarks.md "Through the
# process boundary"): the built binary against a go-sdk constant-tool binary
# and, when test/e2e has node_modules, the TypeScript SDK's, over stdio and
# streamable HTTP at 1 and 16 clients; then 1,000 prose runs in flight and a
# 10,000-prompt catalog. About 3 minutes; BENCH_E2E_FLAGS="-duration 6s"
# for steadier figures, "-profile DIR" for CPU profiles of the servers.
.PHONY: bench-e2e
bench-e2e:
	GO="$(GO)" $(GO) run ./test/bench $(BENCH_E2E_FLAGS)

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

# The binding evaluation (docs/benchmarks.md, "Binding by meaning"):
# precision@1 and false-bind rate of the lexical ranker and of embeddings,
# side by side, over internal/match/testdata/eval. Without EMBEDDINGS_URL
# the embeddings come from the scripted embedder (what CI runs: it proves
# wiring and thresholds, not quality); with it, from that server's
# /embeddings for MODEL, e.g.
#   make eval-binding EMBEDDINGS_URL=http://127.0.0.1:11434/v1 MODEL=nomic-embed-text
.PHONY: eval-binding
eval-binding:
	EMBEDDINGS_URL="$(EMBEDDINGS_URL)" MODEL="$(MODEL)" EMBEDDINGS_API_KEY="$(EMBEDDINGS_API_KEY)" \
		$(GO) test -count=1 -run '^TestEvalBinding$$' -v ./internal/match/
