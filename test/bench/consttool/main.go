// Command consttool is the floor of the end-to-end benchmark (test/bench):
// a go-sdk MCP server whose only tool, "const", returns a constant. It
// serves stdio by default, or streamable HTTP on -http (stateful sessions,
// or the 2026-07-28 stateless era with -stateless), with the SDK's
// defaults, so the benchmark compares our server with what the SDK alone
// costs.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	stateless := flag.Bool("stateless", false, "with -http: the stateless (2026-07-28) handler")
	flag.Parse()
	if path := os.Getenv("PROMPTFORGE_CPUPROFILE"); path != "" {
		// The benchmark's -profile: a CPU profile of the first
		// PROMPTFORGE_PROFILE_FOR, as the promptforge binary built with
		// -tags benchprofile writes.
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			d, _ := time.ParseDuration(os.Getenv("PROMPTFORGE_PROFILE_FOR"))
			time.AfterFunc(max(d, time.Second), func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "consttool", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	s.AddTool(&mcp.Tool{Name: "const", Description: "Returns a constant.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
		})
	var err error
	if *addr == "" {
		err = s.Run(context.Background(), &mcp.StdioTransport{})
	} else {
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: *stateless, DisableLocalhostProtection: true})
		err = http.ListenAndServe(*addr, h)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "consttool:", err)
		os.Exit(1)
	}
}
