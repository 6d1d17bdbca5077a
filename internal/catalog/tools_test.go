package catalog

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestToolsMatchHealthyPromptsByGlob(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "greet.md", "greet", "Greet.")
	writePrompt(t, root, "report_a.md", "report_a", "Report A.")
	writePrompt(t, root, "report_b.md", "report_b", "Report B.")
	writePrompt(t, root, "other.md", "other", "Other.")
	writeFile(t, root, "report_c.md", "---\nname: report_c\ndescription: Broken.\npromptforge: 1\n---\n# R\n\n```lua\nreturn (\n```\n")
	s := mdSettings(root)
	s.Tools = []string{"greet", "report_*"}
	c := mustResolve(t, s, Retain)
	var got []string
	for _, e := range c.Tools() {
		got = append(got, e.Name())
	}
	if want := []string{"greet", "report_a", "report_b"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v (the broken report_c is no tool)", got, want)
	}
	if e, ok := c.Tool("report_b"); !ok || e.Name() != "report_b" {
		t.Errorf("Tool(report_b) = %v, %v", e, ok)
	}
	for _, n := range []string{"other", "report_c", "zzz"} {
		if _, ok := c.Tool(n); ok {
			t.Errorf("%s is a tool", n)
		}
	}
	if !slices.Equal(c.ToolPatterns(), s.Tools) {
		t.Errorf("patterns = %v", c.ToolPatterns())
	}
	if c2 := mustResolve(t, mdSettings(root), Retain); len(c2.Tools()) != 0 || len(c2.ToolPatterns()) != 0 {
		t.Errorf("without the setting: tools %v patterns %v", c2.Tools(), c2.ToolPatterns())
	}
}

func TestToolsBadGlobIsAFault(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "greet.md", "greet", "Greet.")
	s := mdSettings(root)
	s.Tools = []string{"report_[a"}
	err := mustFail(t, s, Retain)
	if !strings.Contains(err.Error(), `tools "report_[a"`) {
		t.Errorf("fault: %v", err)
	}
}

func TestOnPublishFollowsReloads(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "greet.md", "greet", "Greet.")
	h, err := New(context.Background(), mdSettings(root), Options{NoRetrieval: true})
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	h.OnPublish(func() { seen = append(seen, len(h.Current().Catalog().Tools())) })
	s := mdSettings(root)
	s.Tools = []string{"*"}
	if _, err := h.Reload(context.Background(), fixed(s)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int{1}) {
		t.Errorf("callbacks saw %v, want one call after the generation with one tool was published", seen)
	}
}
