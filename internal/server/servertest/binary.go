package servertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// serverPackage is the command the binary tests build, named by import
// path so any package of the module can build it from its own directory.
const serverPackage = "github.com/promptforge-go/promptforge/cmd/promptforge-mcp-server"

// Binary is the server command built once per test process, for the tests
// that meet the server as users do: spawned as a process. A test package
// holds one in a variable and removes it in TestMain.
type Binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Path builds the binary on first use and returns its path; a build that
// failed fails t with the compiler's output.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "promptforge-bin-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "promptforge-mcp-server")
		if out, err := exec.Command("go", "build", "-o", b.path, serverPackage).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%w: %s", err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("build the binary: %v", b.err)
	}
	return b.path
}

// Remove deletes the binary's directory, if it was built; TestMain calls it.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
