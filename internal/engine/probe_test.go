package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/tools"
)

func TestProbe_ReportsEachNeedAndWhatItBoundTo(t *testing.T) {
	g := newGW(t)
	search := searchTool()
	cfg := catalogCfg(g)
	cfg.Tools = []tools.Tool{search, fetchTool()}
	p := parse(t, "# T\n\n"+lua(`
tools.need("search", "Search the web and return a list of results (title, url, description).")
models.need("coder", "General assistant model with deep reasoning for code")
models.default("writer", "General assistant model tuned for prose writing")`)+"\n## A\n\nSpeak.\n")
	res := Probe(context.Background(), p, cfg)
	if res.Unchecked != nil || res.Problem() != "" {
		t.Fatalf("unchecked %v, problem %q", res.Unchecked, res.Problem())
	}
	var got []string
	for _, n := range res.Needs {
		got = append(got, n.Kind.String()+" "+n.Alias+"="+n.Bound)
	}
	if s := strings.Join(got, ", "); s != "tool search=promptforge/web_search, model coder=m-always, model writer=m-never" {
		t.Fatalf("needs %s", s)
	}
	if !res.Needs[2].Default {
		t.Fatal("models.default with a description is not marked Default")
	}
	// A probe contacts nothing: neither the gateway nor a live tool.
	if n := len(g.Requests()); n != 0 || len(search.calls) != 0 {
		t.Fatalf("%d gateway requests, %d tool calls", n, len(search.calls))
	}
}

func TestProbe_ANeedThatBindsNothingIsTheProblem(t *testing.T) {
	p := parse(t, "# T\n\n"+lua(`models.default("writer", "A model for clear technical prose", {context = 100000})`)+"\n## A\n\nSpeak.\n")
	// With models served but none matching: describe one.
	res := Probe(context.Background(), p, Options{Models: catalog})
	want := `needs a model for "writer" (A model for clear technical prose) but no served model matches; describe one in [models."<id>"]`
	if res.Unchecked != nil || !strings.HasPrefix(res.Problem(), want) {
		t.Fatalf("unchecked %v, problem %q, needs %+v", res.Unchecked, res.Problem(), res.Needs)
	}
	// With none at all: pull one.
	if got := Probe(context.Background(), p, Options{}).Problem(); !strings.Contains(got, "ollama pull") {
		t.Fatalf("problem %q", got)
	}
	// A failure caught by pcall is still the prompt's problem, as in a run.
	p = parse(t, "# T\n\n"+lua(`pcall(tools.need, "s", "Search the web")`))
	if got := Probe(context.Background(), p, Options{}).Problem(); !strings.Contains(got, `needs a tool for "s" (Search the web) but no live tool matches; enable one`) {
		t.Fatalf("problem %q", got)
	}
	// Ambiguity is reported in the binding's own words.
	p = parse(t, "# T\n\n"+lua(`models.need("m", "General assistant model")`))
	if got := Probe(context.Background(), p, Options{Models: catalog}).Problem(); !strings.Contains(got, "ambiguous models match") {
		t.Fatalf("problem %q", got)
	}
}

func TestProbe_WhatAProbeCannotDoIsUncheckedNotAProblem(t *testing.T) {
	g := newGW(t)
	for name, h1 := range map[string]string{
		"a model call": lua(`models.default("w", "General assistant model tuned for prose writing")`) + "\nSay hello.\n",
		"a Lua error on args": lua(`models.need("w", "General assistant model tuned for prose writing")
if args == "" then error("give me a topic") end`),
	} {
		t.Run(name, func(t *testing.T) {
			res := Probe(context.Background(), parse(t, "# T\n\n"+h1), catalogCfg(g))
			if res.Unchecked == nil || res.Problem() != "" || len(res.Needs) != 1 || res.Needs[0].Bound != "m-never" {
				t.Fatalf("unchecked %v, problem %q, needs %+v", res.Unchecked, res.Problem(), res.Needs)
			}
		})
	}
	if n := len(g.Requests()); n != 0 {
		t.Fatalf("%d gateway requests", n)
	}
	// No H1, nothing to probe.
	if res := Probe(context.Background(), parse(t, "# T\n\n## A\n\n"+lua(`return 1`)), Options{}); res.Unchecked != nil || len(res.Needs) != 0 {
		t.Fatalf("%+v", res)
	}
}
