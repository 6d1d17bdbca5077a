package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// promptText is a runnable prompt that returns its args (no model turn).
func promptText(name, description string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\npromptforge: 1\n---\n" +
		"# Echo\n\n## Run\n\n```lua\nreturn args\n```\n"
}

// writeFile writes content at root/rel, creating directories.
func writeFile(t testing.TB, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writePrompt(t testing.TB, root, rel, name, description string) string {
	t.Helper()
	return writeFile(t, root, rel, promptText(name, description))
}

func mdSettings(root string) Settings {
	return Settings{Roots: []string{root}, Include: []string{"**/*.md"}}
}

func mustResolve(t *testing.T, s Settings, mode Mode) *Catalog {
	t.Helper()
	c, err := Resolve(context.Background(), s, mode)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return c
}

func mustFail(t *testing.T, s Settings, mode Mode) *Error {
	t.Helper()
	c, err := Resolve(context.Background(), s, mode)
	if err == nil {
		t.Fatalf("Resolve succeeded with %d entries, want faults", c.Len())
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Resolve error is %T (%v), want *Error", err, err)
	}
	return ce
}

func entryNames(c *Catalog) []string {
	var out []string
	for _, e := range c.All() {
		out = append(out, e.Name())
	}
	return out
}

func entryNamed(t *testing.T, c *Catalog, name string) Entry {
	t.Helper()
	for _, e := range c.All() {
		if e.Name() == name {
			return e
		}
	}
	t.Fatalf("no entry %q in %v", name, entryNames(c))
	return Entry{}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
