package app

import (
	"path/filepath"
	"testing"

	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// Boot warns about a file root that is the filesystem root or the home
// directory (B2).
func TestBroadRootsAreNamed(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	narrow := filepath.Join(home, "work")
	servertest.WriteTree(t, narrow, map[string]string{"x": ""})
	got := broadRoots([]string{"/", home, narrow})
	if len(got) != 2 || got[0] != "/" || got[1] != home {
		t.Fatalf("broad roots %q, want / and the home directory", got)
	}
}
