package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// fileCase is one run_prompt call and what its reply must say.
type fileCase struct {
	name    string
	args    map[string]any
	isError bool
	status  string // "" for a text-only refusal
	text    string // substring of the reply
	absent  string // must not appear in the reply
}

func runFileCases(t *testing.T, h *harness, cases []fileCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := h.ok(ToolRunPrompt, tc.args)
			text := textOf(t, res)
			if res.IsError != tc.isError {
				t.Fatalf("isError %v, want %v: %q", res.IsError, tc.isError, text)
			}
			if tc.status == "" {
				if res.StructuredContent != nil {
					t.Fatalf("want a text-only result, got %v", res.StructuredContent)
				}
			} else if s := structuredOf(t, res); s["status"] != tc.status {
				t.Fatalf("status %v, want %s: %q", s["status"], tc.status, text)
			}
			if !strings.Contains(text, tc.text) {
				t.Fatalf("text %q lacks %q", text, tc.text)
			}
			if tc.absent != "" && strings.Contains(text, tc.absent) {
				t.Fatalf("text %q contains %q", text, tc.absent)
			}
		})
	}
}

const (
	readsInput  = "input:\n  path: in.txt\n  description: the text\n"
	writeOutput = "output:\n  path: out.txt\n  description: the result\n"
)

func filePrompts() map[string]string {
	return map[string]string{
		"echo.md":   luaPrompt("echo", "Return the arguments.", "return args"),
		"reader.md": promptFile("reader", "Return the input.", readsInput, "# Reader\n\n## Run\n\n```lua\nreturn store.read(\"in.txt\")\n```\n"),
		"writer.md": promptFile("writer", "Write the output.", writeOutput, "# Writer\n\n## Run\n\n```lua\nstore.write(\"out.txt\", \"produced \" .. args)\nreturn \"returned\"\n```\n"),
	}
}

// Whatever the roots, a caller can neither read the server's configuration
// and env file (the gateway key) nor write them or into the prompts
// directory the watcher publishes (B2), through a path, a symlink or a hard
// link.
func TestTheServersOwnFilesAreOutOfReach(t *testing.T) {
	work := t.TempDir()
	servertest.WriteTree(t, work, map[string]string{
		"prompts.toml": "[gateway]\napi_key = \"secret\"\n",
		"prompts.env":  "KEY=secret\n",
		"notes.txt":    "fine to read",
		"team/x.md":    "a shared prompt",
	})
	// Two prompts directories, a team's (first) and the harness's own
	// (second): output_file may write into neither.
	team := filepath.Join(work, "team")
	h := newHarness(t, fixture{prompts: filePrompts(), opts: func(o *Options) {
		o.FileRoots = []string{work, o.Catalog.Roots()[0]}
		o.ConfigFiles = []string{filepath.Join(work, "prompts.toml"), filepath.Join(work, "prompts.env")}
		o.PromptsDirs = append([]string{team}, o.Catalog.Roots()...)
	}})
	if err := os.Symlink(filepath.Join(work, "prompts.toml"), filepath.Join(work, "config-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h.dir, filepath.Join(work, "prompts-link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(work, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Hard links are second paths to the same files (issue 11 item 4).
	for _, l := range [][2]string{
		{filepath.Join(work, "prompts.toml"), filepath.Join(work, "config.txt")},
		{filepath.Join(work, "prompts.env"), filepath.Join(work, "env.txt")},
		{filepath.Join(h.dir, "echo.md"), filepath.Join(work, "prompt.txt")},
	} {
		if err := os.Link(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	echoBefore := mustRead(t, filepath.Join(h.dir, "echo.md"))

	runFileCases(t, h, []fileCase{
		{name: "config as input", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "prompts.toml")}, isError: true, text: "this server's configuration", absent: "secret"},
		{name: "env file as input", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "prompts.env")}, isError: true, text: "this server's configuration", absent: "secret"},
		{name: "config through a link", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "config-link")}, isError: true, text: "this server's configuration"},
		{name: "config as output", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(work, "prompts.toml")}, isError: true, text: "this server's configuration"},
		{name: "env file as output", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(work, "prompts.env")}, isError: true, text: "this server's configuration"},
		{name: "a live prompt as output", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(h.dir, "echo.md")}, isError: true, text: "inside the prompts directory"},
		{name: "a new prompt as output", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(h.dir, "new.md")}, isError: true, text: "inside the prompts directory"},
		{name: "into the first prompts directory", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(team, "x.md")}, isError: true, text: "inside the prompts directory (" + team + ")"},
		{name: "the prompts directory through a link", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(work, "prompts-link", "echo.md")}, isError: true, text: "inside the prompts directory"},
		{name: "a prompt may be read", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(h.dir, "echo.md")}, status: "completed", text: "return args"},
		{name: "an ordinary file may be read", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "notes.txt")}, status: "completed", text: "fine to read"},
		{name: "a FIFO as output does not block", args: map[string]any{"prompt": "writer", "args": "x", "output_file": filepath.Join(work, "fifo")}, status: "completed", text: "is not a regular file"},
		{name: "a FIFO as input", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "fifo")}, isError: true, status: "failed", text: "not a regular file"},
		{name: "a missing input names no internal op", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "nope.txt")}, isError: true, status: "failed", text: "no such file or directory", absent: "statat"},
		{name: "output_file without a declared output is ignored", args: map[string]any{"prompt": "echo", "args": "v", "output_file": filepath.Join(work, "prompts.toml")}, status: "completed", text: "v"},
		{name: "config hard link as input", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "config.txt")}, isError: true, text: "this server's configuration", absent: "secret"},
		{name: "env hard link as input", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "env.txt")}, isError: true, text: "this server's configuration", absent: "secret"},
		{name: "config hard link as output", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(work, "config.txt")}, isError: true, text: "this server's configuration"},
		{name: "env hard link as output", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(work, "env.txt")}, isError: true, text: "this server's configuration"},
		{name: "prompt hard link as output", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(work, "prompt.txt")}, isError: true, text: "more than one hard link"},
		{name: "prompt hard link may be read", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "prompt.txt")}, status: "completed", text: "return args"},
	})
	if got := mustRead(t, filepath.Join(h.dir, "echo.md")); string(got) != string(echoBefore) {
		t.Fatal("a live prompt was rewritten")
	}
	if got := mustRead(t, filepath.Join(work, "prompts.toml")); !strings.Contains(string(got), "api_key") {
		t.Fatal("the configuration was rewritten")
	}
	if got := mustRead(t, filepath.Join(work, "prompts.env")); string(got) != "KEY=secret\n" {
		t.Fatal("the env file was rewritten")
	}
}

// Paths as callers spell them: a raw ".." climb, relative paths, links to
// folders inside a root, a dangling final link, and a root that is itself a
// link.
func TestCallerPathSpellings(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	outside := filepath.Join(base, "outside")
	servertest.WriteTree(t, real, map[string]string{"sub/in.txt": "inside", "sub/keep": ""})
	servertest.WriteTree(t, outside, map[string]string{"secret.txt": "secret"})
	link := filepath.Join(base, "root-link")
	for _, l := range [][2]string{
		{real, link},
		{filepath.Join(real, "sub"), filepath.Join(real, "sub-link")},
		{filepath.Join(outside, "gone.txt"), filepath.Join(real, "dangling-out")},
		{filepath.Join(real, "sub", "gone.txt"), filepath.Join(real, "dangling-in")},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, fixture{prompts: filePrompts(), opts: func(o *Options) { o.FileRoots = []string{link} }})
	t.Chdir(filepath.Join(real, "sub"))

	runFileCases(t, h, []fileCase{
		{name: "raw climb out", args: map[string]any{"prompt": "reader", "input_file": link + "/sub/../../outside/secret.txt"}, isError: true, text: "resolves outside", absent: "secret\""},
		{name: "raw climb that stays inside", args: map[string]any{"prompt": "reader", "input_file": link + "/sub/../sub/in.txt"}, status: "completed", text: "inside"},
		{name: "relative path inside", args: map[string]any{"prompt": "reader", "input_file": "in.txt"}, status: "completed", text: "inside"},
		{name: "relative climb out", args: map[string]any{"prompt": "reader", "input_file": "../../outside/secret.txt"}, isError: true, text: "resolves outside"},
		{name: "through an in-root folder link", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(link, "sub-link", "in.txt")}, status: "completed", text: "inside"},
		{name: "output through an in-root folder link", args: map[string]any{"prompt": "writer", "args": "L", "output_file": filepath.Join(link, "sub-link", "out.txt")}, status: "completed", text: "returned"},
		{name: "dangling link pointing out", args: map[string]any{"prompt": "writer", "output_file": filepath.Join(link, "dangling-out")}, isError: true, text: "resolves outside"},
		{name: "dangling link pointing in", args: map[string]any{"prompt": "reader", "input_file": filepath.Join(link, "dangling-in")}, isError: true, status: "failed", text: "no such file", absent: "statat"},
	})
	if got := mustRead(t, filepath.Join(real, "sub", "out.txt")); string(got) != "produced L" {
		t.Fatalf("the output through the folder link holds %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "gone.txt")); err == nil {
		t.Fatal("a file was written outside the roots through a dangling link")
	}
}

// A hard link put in place after the call was checked, before the run
// reads or writes, is judged on the opened handle: the configuration is
// neither read nor truncated.
func TestHardLinkAfterTheCheckIsJudgedOnTheHandle(t *testing.T) {
	work := t.TempDir()
	config := filepath.Join(work, "prompts.toml")
	servertest.WriteTree(t, work, map[string]string{"prompts.toml": "api_key = \"secret\"\n", "in.txt": "plain", "out.txt": "old"})
	a := fileAccess{roots: fileRoots{work}, secret: []string{config}}
	for _, tc := range []struct {
		name  string
		file  string
		write bool
	}{{"read", "in.txt", false}, {"write", "out.txt", true}} {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(work, tc.file)
			pl, err := a.check("f", target, tc.write)
			if err != nil {
				t.Fatalf("an ordinary file was refused: %v", err)
			}
			if err := os.Remove(target); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(config, target); err != nil {
				t.Fatal(err)
			}
			if tc.write {
				err = pl.write("overwritten")
			} else {
				var text string
				text, err = pl.read()
				if strings.Contains(text, "secret") {
					t.Fatalf("the configuration was read: %q", text)
				}
			}
			if err == nil || !strings.Contains(err.Error(), "this server's configuration") {
				t.Fatalf("err %v, want the configuration refused", err)
			}
			if got := mustRead(t, config); string(got) != "api_key = \"secret\"\n" {
				t.Fatalf("the configuration now holds %q", got)
			}
		})
	}
}
