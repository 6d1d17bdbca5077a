// Command stdiodrive makes N tools/call requests over stdio to the server
// it spawns, with the go-sdk client test/bench uses, and exits: a fixed
// amount of work for counting what the server process does per call
// without the machine's load (docs/benchmarks.md, "The stdio fast lane"),
// by running it at two N under a counter and taking the difference:
//
//	stdiodrive N VERSION valgrind --tool=callgrind BIN serve --stdio prompts.toml
//	stdiodrive N VERSION perf stat -e context-switches,syscalls:sys_enter_futex -- BIN serve --stdio prompts.toml
//
// It calls run_prompt of the benchmark's echo prompt, or with -const the
// go-sdk floor's const tool (test/bench/consttool).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	constTool := flag.Bool("const", false, "call the floor's const tool instead of run_prompt")
	flag.Parse()
	if err := drive(flag.Args(), *constTool); err != nil {
		fmt.Fprintln(os.Stderr, "stdiodrive:", err)
		os.Exit(1)
	}
}

func drive(args []string, constTool bool) error {
	if len(args) < 3 {
		return fmt.Errorf("usage: stdiodrive [-const] N PROTOCOL-VERSION COMMAND [ARG...]")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 {
		return fmt.Errorf("N %q: give the number of calls, e.g. 1000", args[0])
	}
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdiodrive", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(args[2], args[3:]...)}, &mcp.ClientSessionOptions{ProtocolVersion: args[1]})
	if err != nil {
		return fmt.Errorf("start and connect %s: %w", args[2], err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "run_prompt", Arguments: map[string]any{"prompt": "echo", "args": "hello"}}
	if constTool {
		params = &mcp.CallToolParams{Name: "const", Arguments: map[string]any{}}
	}
	for i := range n {
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
		if res.IsError {
			return fmt.Errorf("call %d answered with an error: %+v", i, res.Content)
		}
	}
	return nil
}
