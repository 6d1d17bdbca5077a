package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
)

func loadExample(t *testing.T, name string) *prompt.Prompt {
	t.Helper()
	src, err := os.ReadFile("../../examples/prompts/" + name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prompt.Parse(src)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

func TestExample_Digest(t *testing.T) {
	p := loadExample(t, "digest.md")
	if p.Frontmatter.Input == nil || p.Frontmatter.Input.Path != "texts.txt" {
		t.Fatalf("digest declares input %+v", p.Frontmatter.Input)
	}
	// The model's answer names the text it was given, so the digest's
	// order can be checked against the input's.
	summarise := func(req gatewaytest.Request) gatewaytest.Reply {
		msg := lastUser(req)
		for _, name := range []string{"Alpha", "Beta", "Gamma"} {
			if strings.Contains(msg, "about "+name) {
				return gatewaytest.Text("A sentence on " + name + ".")
			}
		}
		return gatewaytest.Text("?")
	}

	t.Run("input file", func(t *testing.T) {
		g := newGW(t)
		g.Respond(summarise)
		st := store.New()
		if err := st.Seed(map[string]string{"texts.txt": "A text about Alpha.\nIt has two lines.\n---\n\nA text about Beta <b>.\n  ---  \nA text about Gamma.\n---\n"}); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		cfg := g.cfg()
		cfg.Observer = rec
		res, err := Run(context.Background(), p, "ignored when the file exists", st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := "1. A sentence on Alpha.\n2. A sentence on Beta.\n3. A sentence on Gamma."
		if res.Value != want || res.Turns != 3 {
			t.Fatalf("value %q, turns %d", res.Value, res.Turns)
		}
		var prompts []string
		for _, req := range g.Requests() {
			prompts = append(prompts, lastUser(req))
		}
		slices.Sort(prompts)
		if len(prompts) != 3 || !strings.Contains(prompts[0], "A text about Alpha.\nIt has two lines.") ||
			!strings.Contains(prompts[1], "A text about Beta &lt;b>.") || !strings.Contains(prompts[1], "untrusted_input_") {
			t.Fatalf("arm prompts %q", prompts)
		}
		if rec.count(FanoutArmSucceeded) != 3 || !slices.Contains(rec.logs(), "Lua: digesting 3 texts") {
			t.Fatalf("events %v", rec.lines())
		}
	})
	t.Run("args", func(t *testing.T) {
		g := newGW(t)
		g.Respond(summarise)
		r := runP(t, p, "A text about Gamma.\n---\nA text about Alpha.", g.cfg())
		r.ok(t, "1. A sentence on Gamma.\n2. A sentence on Alpha.")
	})
	t.Run("nothing to digest", func(t *testing.T) {
		// No text: no arm, no model call, no gateway needed.
		r := runP(t, p, "  \n---\n", Options{Models: []gateway.Model{testModel}})
		r.ok(t, "Nothing to digest: give one or more texts separated by lines holding only ---.")
	})
}

// prompt-language §8.10: every shipped prompt parses and names no concrete
// tool: prompts state capabilities (tools.need) and the server binds them, so
// the names of the tools that happen to provide them must not appear
// anywhere.
func TestExamples_ShippedPromptsParseAndNameNoTools(t *testing.T) {
	paths, err := filepath.Glob("../../examples/prompts/*.md")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no shipped prompts found: %v", err)
	}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prompt.Parse(src); err != nil {
			t.Errorf("%s does not parse: %v", path, err)
		}
		for _, name := range []string{"web_search", "web_fetch"} {
			if i := strings.Index(string(src), name); i >= 0 {
				line := strings.Count(string(src[:i]), "\n") + 1
				t.Errorf("%s:%d names the concrete tool %s", path, line, name)
			}
		}
	}
}
