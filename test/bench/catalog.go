package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pageCall lists one 100-entry page from the middle of the catalog.
func pageCall() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "list_prompts", Arguments: map[string]any{"cursor": "5000"}}
}

// catalogPages measures a list_prompts page of the catalog in prompts
// through the full client round trip (the go-sdk client decoding the
// page included) with one client, over each transport of -transports (on
// stdio, each protocol of -stdio-protocol), our server beside the
// -baseline's in interleaved rounds, and prints a line per server with
// the ratio of ours to the baseline's.
func catalogPages(ctx context.Context, o options, prompts string) error {
	versions := strings.FieldsFunc(o.stdioVersions, func(r rune) bool { return r == ',' })
	fmt.Printf("  list_prompts page (100 entries, cursor 5000) through the full client round trip, 1 client, %s per server in %d interleaved rounds:\n", o.duration, o.rounds)
	fmt.Printf("  %-26s %-27s %9s %9s %9s %9s %9s   %s\n", "transport", "server", "calls/s", "p50", "p90", "p99", "cpu/call", "ours / baseline: p50, server cpu per call")
	for _, tr := range strings.FieldsFunc(o.only, func(r rune) bool { return r == ',' }) {
		eras := []string{"2025-11-25"}
		switch tr {
		case "stdio":
			eras = versions
		case "http-stateless":
			eras = []string{"2026-07-28"}
		}
		for _, version := range eras {
			if err := catalogPage(ctx, o, tr, version, prompts); err != nil {
				return fmt.Errorf("the list_prompts page over %s %s: %w", tr, version, err)
			}
		}
	}
	return nil
}

// catalogPage is catalogPages' measurement on one transport and protocol.
func catalogPage(ctx context.Context, o options, tr, version, prompts string) error {
	bins := [][2]string{{"promptforge", filepath.Join(o.dir, "promptforge-mcp-server")}}
	if o.baseline != "" {
		bins = append([][2]string{{"baseline " + o.baseline, filepath.Join(o.dir, "promptforge-baseline")}}, bins...)
	}
	var targets []target
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	for _, b := range bins {
		label := strings.Fields(b[0])[0]
		env := profileEnv(o, fmt.Sprintf("catalog-%s-%s-%s", tr, version, label), o.duration+o.duration/2)
		var start starter
		if tr == "stdio" {
			cfg, err := writeConfig(o.dir, "10k-stdio", prompts, "", 0, "")
			if err != nil {
				return err
			}
			start = stdioStarter([]string{b[1], "serve", "--stdio", cfg}, env, version)
		} else {
			port, err := freePort()
			if err != nil {
				return err
			}
			cfg, err := writeConfig(o.dir, "10k-"+port, prompts, port, 0, "")
			if err != nil {
				return err
			}
			start = httpStarter([]string{b[1], "serve", cfg}, port, version, env)
		}
		connect, stop, pids, err := start()
		if err != nil {
			return fmt.Errorf("start %s: %w", b[0], err)
		}
		targets = append(targets, target{name: b[0], call: pageCall, connect: connect, stop: stop, pids: pids})
	}
	results, err := measure(ctx, o, targets, tr, 1)
	if err != nil {
		return err
	}
	label := tr + " " + version
	for i, t := range targets {
		s := &results[i]
		ratio := ""
		if len(targets) == 2 && i == 1 {
			b := &results[0]
			ratio = fmt.Sprintf("p50 %.2fx, cpu %.2fx", float64(s.pct(0.5))/float64(b.pct(0.5)), float64(s.cpuPerCall())/float64(b.cpuPerCall()))
		}
		fmt.Printf("  %-26s %-27s %9.0f %9s %9s %9s %9s   %s\n", label, t.name, s.rate(), us(s.pct(0.5)), us(s.pct(0.9)), us(s.pct(0.99)), us(s.cpuPerCall()), ratio)
	}
	return nil
}
