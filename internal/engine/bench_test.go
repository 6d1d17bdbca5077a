package engine

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
)

var luaOnly = []byte(header + "# Title\n\n## Run\n\n```lua\nreturn \"hello \" .. args\n```\n")

// BenchmarkParseAndRunLua is parse + execute of a Lua-only prompt: the
// target is ≤150 µs and ≤300 KB per run.
func BenchmarkParseAndRunLua(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := prompt.Parse(luaOnly)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Run(ctx, p, "world", nil, Options{})
		if err != nil || res.Value != "hello world" {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkRunLua is the execute half alone, over one parsed prompt.
func BenchmarkRunLua(b *testing.B) {
	ctx := context.Background()
	p, err := prompt.Parse(luaOnly)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(ctx, p, "world", nil, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

var oneTurn = []byte(header + "# Title\n\n" + defaultModel + "\n## Run\n\nSay hello to {{ args }}.\n")

// BenchmarkRunOneTurn runs a one-prose prompt against gatewaytest; compare
// with BenchmarkLoopbackFloor (target: ≤150 µs more).
func BenchmarkRunOneTurn(b *testing.B) {
	g := newGW(b)
	reply := gatewaytest.Text("hello")
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return reply })
	p, err := prompt.Parse(oneTurn)
	if err != nil {
		b.Fatal(err)
	}
	cfg := g.cfg()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(ctx, p, "world", nil, cfg)
		if err != nil || res.Value != "hello" {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkLoopbackFloor is the same HTTP exchange with a plain client and
// a pre-built body: the cost no engine can avoid.
func BenchmarkLoopbackFloor(b *testing.B) {
	g := newGW(b)
	reply := gatewaytest.Text("hello")
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return reply })
	body := []byte(`{"model":"test-model","messages":[{"role":"user","content":"Say hello to world."}]}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	url := g.URL() + "/chat/completions"
	b.ReportAllocs()
	for b.Loop() {
		req, err := http.NewRequest("POST", url, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+g.APIKey())
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
	}
}

// BenchmarkParseOnly isolates prompt.Parse of the same file, to show how the
// parse+run budget splits.
func BenchmarkParseOnly(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := prompt.Parse(luaOnly); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFanoutPerArm is a fanout over 64 members whose worker is
// Lua-only, so what it measures is the per-arm overhead: the arm's VM,
// goroutine, var clone, shared replay and result (target ≤200 µs per arm).
// The caller's own section is amortised over the 64 arms.
func BenchmarkFanoutPerArm(b *testing.B) {
	const arms = 64
	p, err := prompt.Parse([]byte(header + "# Title\n\n## Main\n\n```lua\n" +
		"local list = {}\nfor i = 1, 64 do list[i] = i end\n" +
		"return #fanout(\"## Worker\", list)\n```\n\n## Worker\n\n---\n\n```lua\nreturn item * 2\n```\n"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(ctx, p, "", nil, Options{})
		if err != nil || res.Value != "64" {
			b.Fatal(res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*arms), "ns/arm")
}
