package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const benchPrompts = 10_000

// benchCatalog writes benchPrompts prompts in 100 directories, each with a
// short Lua section and a prose section, dated an hour ago like files of
// an existing catalog.
func benchCatalog(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	old := time.Now().Add(-time.Hour)
	for i := range benchPrompts {
		rel := fmt.Sprintf("group%02d/p%05d.md", i%100, i)
		p := writeFile(b, root, rel, benchPrompt(i, "v1"))
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// cpuTime is the process's user+system CPU time: on a shared machine it
// says more about the work done than wall time does.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a cpu-ms/op metric for the loop that started at start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

func benchPrompt(i int, body string) string {
	return fmt.Sprintf("---\nname: prompt_%05d\ndescription: Summarize report number %d for a reader in a hurry.\npromptforge: 1\n---\n"+
		"# Prompt %d\n\n## Prepare\n\n```lua\nvar.n = %d\nreturn args\n```\n\n## Write\n\nWrite a summary of {{ args }} (%s).\n", i, i, i, i, body)
}

func BenchmarkResolve10k(b *testing.B) {
	root := benchCatalog(b)
	s := mdSettings(root)
	ctx := context.Background()
	start := cpuTime(b)
	for b.Loop() {
		c, err := Resolve(ctx, s, Reject)
		if err != nil {
			b.Fatal(err)
		}
		if c.Len() != benchPrompts {
			b.Fatalf("%d entries", c.Len())
		}
	}
	reportCPU(b, start)
}

func BenchmarkReloadOneSaved(b *testing.B) {
	root := benchCatalog(b)
	s := mdSettings(root)
	ctx := context.Background()
	h, err := New(ctx, s, Options{})
	if err != nil {
		b.Fatal(err)
	}
	saved := filepath.Join(root, "group07", "p00007.md")
	description := func(n int) string {
		return fmt.Sprintf("---\nname: prompt_00007\ndescription: Edition %d of report seven.\npromptforge: 1\n---\n# P\n\n## Run\n\nSay hi.\n", n)
	}
	body := func(n int) string { return benchPrompt(7, fmt.Sprintf("v%d", n)) }
	for _, tt := range []struct {
		name string
		edit func(n int) string
		// rank: the first need_prompt after the reload is part of the
		// measured work, wherever the index gets built.
		rank bool
		// full: resolve in full (Reload, what the first reload after the
		// watch starts does) rather than patch the saved path as the
		// watcher's reloads do.
		full bool
	}{
		{"body", body, false, false},
		{"description", description, false, false},
		{"description+need_prompt", description, true, false},
		{"body,full", body, false, true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			n := 0
			var writing time.Duration
			start := cpuTime(b)
			for b.Loop() {
				n++
				b.StopTimer()
				w := cpuTime(b)
				if err := os.WriteFile(saved, []byte(tt.edit(n)), 0o644); err != nil {
					b.Fatal(err)
				}
				writing += cpuTime(b) - w
				b.StartTimer()
				var changes *changeSet
				if !tt.full {
					changes = &changeSet{since: h.Current().Catalog(), paths: []string{saved}}
				}
				out, err := h.reload(ctx, fixed(s), changes)
				if err != nil || !out.Published || out.patched == tt.full {
					b.Fatalf("reload: %+v, %v", out, err)
				}
				if tt.rank {
					es, err := h.Current().Shortlist(ctx, fmt.Sprintf("Edition %d of report seven", n), 3)
					if err != nil || len(es) == 0 || es[0].Name() != "prompt_00007" {
						b.Fatalf("shortlist after reload: %v, %v", es, err)
					}
				}
			}
			reportCPU(b, start+writing)
		})
	}
}
