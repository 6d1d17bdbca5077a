package server

import (
	"fmt"
	"testing"
)

// benchCatalog is n Lua prompts, every one also named a tool by the glob
// "*" when tools is set: the largest follow can be asked to do.
func benchCatalog(b *testing.B, n int, tools bool) *harness {
	f := fixture{prompts: numberedPrompts(n, 5)}
	if tools {
		f.tools = []string{"*"}
	}
	return newHarness(b, f)
}

// What a reload of a 10,000-prompt catalog costs the server when nothing
// a client sees changed (the usual one-file edit), and when everything
// must be registered again (as at boot):
//
//	go test ./internal/server -run '^$' -bench Follow -benchmem
func BenchmarkFollow(b *testing.B) {
	for _, tools := range []bool{false, true} {
		h := benchCatalog(b, 10000, tools)
		b.Run(fmt.Sprintf("unchanged/tools=%v", tools), func(b *testing.B) {
			for b.Loop() {
				h.srv.follow()
			}
		})
		b.Run(fmt.Sprintf("all-new/tools=%v", tools), func(b *testing.B) {
			for b.Loop() {
				h.srv.followMu.Lock()
				h.srv.promptSigs, h.srv.toolSigs = nil, nil
				h.srv.followMu.Unlock()
				h.srv.follow()
			}
		})
	}
}
