package main

// Acceptance tests of the dev loop through the built binary (issue 14):
// watch, capture, dump, Ctrl-C, --help and file:line.

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

var bin servertest.Binary

// binary builds the command once per test process; TestMain removes it.
func binary(t *testing.T) string { return bin.Path(t) }

// patience bounds a wait for the child; it is a failure deadline, not a
// sleep: every wait below ends as soon as what it waits for happens.
const patience = 60 * time.Second

// child is the binary running one command line.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line
	stderr *syncBuffer
	exited chan struct{}
}

// syncBuffer is the child's stderr; changed is signalled on each write,
// so a test waits for a line instead of polling for it.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, environ map[string]string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range environ {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	c := &child{t: t, cmd: cmd, lines: make(chan string, 64), stderr: &syncBuffer{changed: make(chan struct{}, 1)}, exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			cmd.Process.Kill()
			c.wait()
		}
	})
	return c
}

// line is the child's next stdout line.
func (c *child) line() string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("stdout closed; stderr:\n%s", c.stderr.String())
		}
		return l
	case <-time.After(patience):
		c.t.Fatalf("no stdout line; stderr:\n%s", c.stderr.String())
	}
	return ""
}

// waitStderr waits until stderr contains s.
func (c *child) waitStderr(s string) {
	c.t.Helper()
	timeout := time.After(patience)
	for !strings.Contains(c.stderr.String(), s) {
		select {
		case <-c.stderr.changed:
		case <-timeout:
			c.t.Fatalf("stderr never showed %q:\n%s", s, c.stderr.String())
		}
	}
}

// wait is the child's exit code.
func (c *child) wait() int {
	for range c.lines {
	}
	err := c.cmd.Wait()
	close(c.exited)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		c.t.Fatalf("wait: %v", err)
	}
	return 0
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func luaPrompt(lua string) string {
	return "---\nname: p\ndescription: A prompt.\npromptforge: 1\n---\n# P\n\n## A\n\n```lua\n" + lua + "\n```\n"
}

func TestBinaryWatchRerunsOnEverySave(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.md")
	writeFile(t, p, luaPrompt(`store.write("out.txt", "one") return "run one"`))
	c := start(t, nil, "run", "--watch", p)
	if got := c.line(); got != "run one" {
		t.Fatalf("first run printed %q", got)
	}
	c.waitStderr("watching for saves")
	writeFile(t, p, luaPrompt(`store.write("out.txt", "two") return "run two"`))
	if got := c.line(); got != "run two" {
		t.Fatalf("after the first save: %q", got)
	}
	// A save that breaks the prompt is reported and watching goes on.
	writeFile(t, p, luaPrompt(`return (`))
	c.waitStderr(p + ":")
	writeFile(t, p, luaPrompt(`return "run three"`))
	if got := c.line(); got != "run three" {
		t.Fatalf("after the third save: %q", got)
	}
	// Each run's store was dumped beside the prompt, and the dump did not
	// trigger runs of its own: every line above is a save's.
	if _, err := os.Stat(filepath.Join(dir, "p.store", "out.txt")); !os.IsNotExist(err) {
		t.Errorf("the last run wrote no out.txt, so the dump should have removed it: %v", err)
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	if code := c.wait(); code != exitInterrupted {
		t.Fatalf("exit %d after Ctrl-C, want 130; stderr:\n%s", code, c.stderr.String())
	}
	if n := strings.Count(c.stderr.String(), `msg="run finished"`); n != 3 {
		t.Errorf("%d runs, want 3 (one per good save):\n%s", n, c.stderr.String())
	}
}

func TestBinaryCaptureRawWritesTheTurns(t *testing.T) {
	g := gatewaytest.New(t)
	g.Enqueue(gatewaytest.Text("captured reply"))
	dir := t.TempDir()
	p := filepath.Join(dir, "p.md")
	writeFile(t, p, "---\nname: p\ndescription: A prompt.\npromptforge: 1\n---\n# P\n\n```lua\nmodels.default(\"m\", \"A general assistant model for tests\")\n```\n\n## Ask\n\nSay hello to {{ args }}.\n")
	c := start(t, gatewayEnv(g), "run", "--capture-raw", p, "Ada")
	if got := c.line(); got != "captured reply" {
		t.Fatalf("value %q", got)
	}
	if code := c.wait(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, c.stderr.String())
	}
	errOut := c.stderr.String()
	if !strings.Contains(errOut, "--capture-raw writes every model turn") || !strings.Contains(errOut, "captured 1 model turn(s)") {
		t.Errorf("stderr lacks the warning or the count:\n%s", errOut)
	}
	trace := filepath.Join(dir, "p.store", ".trace")
	req, err := os.ReadFile(filepath.Join(trace, "turn-1-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	if reqs := g.Requests(); len(reqs) != 1 || !bytes.Equal(req, reqs[0].Raw) || !bytes.Contains(req, []byte("Say hello to Ada.")) {
		t.Errorf("turn-1-request.json is not the request the gateway received:\n%s", req)
	}
	resp, err := os.ReadFile(filepath.Join(trace, "turn-1-response.json"))
	if err != nil || !bytes.Contains(resp, []byte(`"content":"captured reply"`)) {
		t.Errorf("turn-1-response.json: %v\n%s", err, resp)
	}
	if info, err := os.Stat(filepath.Join(trace, "turn-1-response.json")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("response file mode: %v %v", info.Mode(), err)
	}
}

func TestBinaryDumpReconcilesAndRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.md")
	outside := filepath.Join(t.TempDir(), "outside.txt")
	writeFile(t, outside, "untouched")
	store := filepath.Join(dir, "p.store")
	os.Mkdir(store, 0o700)
	// stale.txt is an earlier dump's (its record lists it); mine.txt was
	// put there by hand, and a dump removes only what dumps wrote.
	writeFile(t, filepath.Join(store, "stale.txt"), "from an earlier run")
	writeFile(t, filepath.Join(store, ".promptforge-dump"), "stale.txt\n")
	writeFile(t, filepath.Join(store, "mine.txt"), "not the dump's")
	os.Symlink(outside, filepath.Join(store, "link.txt"))
	writeFile(t, p, luaPrompt(`store.write("kept.txt", "new") store.write("link.txt", "through the link?") error("the run fails")`))
	c := start(t, nil, "run", "--dump", p)
	if code := c.wait(); code != exitFailure {
		t.Fatalf("exit %d:\n%s", code, c.stderr.String())
	}
	if data, _ := os.ReadFile(filepath.Join(store, "kept.txt")); string(data) != "new" {
		t.Errorf("a failed run's store was not dumped: %q", data)
	}
	if _, err := os.Stat(filepath.Join(store, "stale.txt")); !os.IsNotExist(err) {
		t.Errorf("stale file not removed: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(store, "mine.txt")); string(data) != "not the dump's" {
		t.Errorf("a file no dump wrote was removed or changed: %q", data)
	}
	if data, _ := os.ReadFile(outside); string(data) != "untouched" {
		t.Errorf("written through the link: %q", data)
	}
	if !strings.Contains(c.stderr.String(), "link.txt skipped") || !strings.Contains(c.stderr.String(), "symbolic link") {
		t.Errorf("stderr does not say the link was refused:\n%s", c.stderr.String())
	}
}

func TestBinaryCtrlCCancelsTheRunAndExits130(t *testing.T) {
	g := gatewaytest.New(t)
	gate := gatewaytest.NewGate() // never released: the arms wait on the model
	g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("a")), gatewaytest.Gated(gate, gatewaytest.Text("b")))
	dir := t.TempDir()
	p := filepath.Join(dir, "p.md")
	writeFile(t, p, "---\nname: p\ndescription: A prompt.\npromptforge: 1\n---\n# P\n\n```lua\nmodels.default(\"m\", \"A general assistant model for tests\")\n```\n\n"+
		"## Fan\n\n```lua\nreturn fanout(\"## Arm\", {\"a\", \"b\"})\n```\n\n## Arm\n\nSay {{ item }}.\n")
	c := start(t, gatewayEnv(g), "run", p)
	select {
	case <-gate.ArrivedN(2): // both fanout arms wait on the model
	case <-time.After(patience):
		t.Fatalf("the arms never reached the gateway:\n%s", c.stderr.String())
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	if code := c.wait(); code != exitInterrupted {
		t.Fatalf("exit %d, want 130; stderr:\n%s", code, c.stderr.String())
	}
	errOut := c.stderr.String()
	// The run was waited for: it logged its end, cancelled, before exit.
	if !strings.Contains(errOut, `msg="run finished" status=failed`) || !strings.Contains(errOut, "interrupted: the run was cancelled") {
		t.Errorf("stderr:\n%s", errOut)
	}
}

func TestBinaryHelpAndLocatedErrors(t *testing.T) {
	for _, cmd := range []string{"run", "serve", "check"} {
		c := start(t, nil, cmd, "--help")
		first := c.line()
		if code := c.wait(); code != exitOK || !strings.HasPrefix(first, "usage: promptforge-mcp-server "+cmd+" ") {
			t.Errorf("%s --help: exit %d, first line %q, stderr %q", cmd, code, first, c.stderr.String())
		}
	}
	p := filepath.Join(t.TempDir(), "p.md")
	writeFile(t, p, luaPrompt("local t = nil\nreturn t.x"))
	c := start(t, nil, "run", p)
	if code := c.wait(); code != exitFailure {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(c.stderr.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, p+":12: ") {
		t.Errorf("the failure does not start with file:line: %q", last)
	}
}
