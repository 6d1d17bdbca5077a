package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

var bin servertest.Binary

// binary builds cmd/promptforge-mcp-server once per test process; TestMain
// removes the directory.
func binary(t *testing.T) string { return bin.Path(t) }

// proc is the binary serving stdio.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bytes.Buffer
}

func startStdio(t *testing.T, config string) *proc {
	t.Helper()
	return startStdioIn(t, "", config)
}

// startStdioIn starts the binary with its working directory at dir ("":
// the test's own), as a harness starts it in its project directory.
func startStdioIn(t *testing.T, dir, config string) *proc {
	t.Helper()
	cmd := exec.Command(binary(t), "serve", "--stdio", config)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<20), stderr: &stderr}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() {
			cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return p
}

func (p *proc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("write to the server: %v (stderr:\n%s)", err, p.stderr)
	}
}

// recv reads one line of stdout, which must be one JSON-RPC message.
func (p *proc) recv() map[string]any {
	p.t.Helper()
	line, err := p.stdout.ReadString('\n')
	if err != nil {
		p.t.Fatalf("read from the server: %v (stderr:\n%s)", err, p.stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
		p.t.Fatalf("stdout carried a line that is not JSON-RPC: %q", line)
	}
	return m
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestBinaryOverStdio(t *testing.T) {
	path := servertest.ConfigDir(t, "watch = false", nil, basePrompts)
	p := startStdio(t, path)

	p.send(initializeBody)
	init := p.recv()["result"].(map[string]any)
	if name := init["serverInfo"].(map[string]any)["name"]; name != ServerName {
		t.Fatalf("serverInfo.name %v", name)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var names []string
	for _, tool := range p.recv()["result"].(map[string]any)["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, ","); got != "list_prompts,run_prompt,need_prompt,check_run" {
		t.Fatalf("tools %s", got)
	}

	// An over-long line and one that is not JSON are answered with
	// JSON-RPC errors (id null); the request after them is answered.
	p.send(`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"` + strings.Repeat("y", transport.MaxLineBytes+1) + `"}}`)
	p.send(`not json at all`)
	p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"from the binary"}}}`)
	for _, code := range []float64{-32600, -32700} {
		if r := p.recv(); r["id"] != nil || r["error"].(map[string]any)["code"] != code {
			t.Fatalf("refusal %v: %v", code, r)
		}
	}
	reply := p.recv()
	if reply["id"] != float64(4) {
		t.Fatalf("reply %v", reply)
	}
	text := reply["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
	if text != "from the binary" {
		t.Fatalf("run_prompt text %v", text)
	}

	// The peer hangs up: the server exits 0.
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v (stderr:\n%s)", err, p.stderr)
	}
	if rest, _ := io.ReadAll(p.stdout); len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("stdout after the session: %q", rest)
	}
	if !strings.Contains(p.stderr.String(), "serving on stdio") {
		t.Fatalf("stderr lacks the startup line:\n%s", p.stderr)
	}
}

// Claude Code starts a stdio server in the project directory: a config
// elsewhere, whose [paths] are relative, still serves its prompts, because
// they are read against the config file's directory (issue 10, item 7).
func TestBinaryOverStdioFromAnotherDirectory(t *testing.T) {
	base := t.TempDir()
	servertest.WriteTree(t, base, map[string]string{
		"project/README":         "",
		"config/prompts/echo.md": basePrompts["echo.md"],
		"config/prompts.toml": "[server]\nwatch = false\n[paths]\nprompts = \"prompts\"\n" +
			"[gateway]\nurl = \"http://127.0.0.1:1/v1\"\napi_key = \"k\"\ntimeout = \"2s\"\n[catalog]\ninclude = [\"*.md\"]\n",
	})
	p := startStdioIn(t, filepath.Join(base, "project"), filepath.Join(base, "config", "prompts.toml"))
	p.send(initializeBody)
	p.recv()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"from the project"}}}`)
	reply := p.recv()
	res, ok := reply["result"].(map[string]any)
	if !ok || res["content"].([]any)[0].(map[string]any)["text"] != "from the project" {
		t.Fatalf("reply %v (stderr:\n%s)", reply, p.stderr)
	}
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v (stderr:\n%s)", err, p.stderr)
	}
	if want := "prompts=" + filepath.Join(base, "config", "prompts"); !strings.Contains(p.stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, p.stderr)
	}
}

// One broken prompt does not keep the server from starting (issue 17): over
// stdio, as an IDE starts it, the healthy prompt runs, the broken one is
// listed with its problem and refused with it, and the log says so once.
// check stays strict: the same catalog fails it with the fault report.
func TestBinaryServesPastABrokenPrompt(t *testing.T) {
	path := servertest.ConfigDir(t, "watch = false", nil, map[string]string{
		"upper.md": luaPrompt("Shouty", "Shout.", "return 1"),
		"echo.md":  basePrompts["echo.md"],
	})
	p := startStdio(t, path)
	p.send(initializeBody)
	p.recv()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	call := func(id int, tool, args string) map[string]any {
		t.Helper()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
		reply := p.recv()
		res, ok := reply["result"].(map[string]any)
		if !ok {
			t.Fatalf("%s: reply %v (stderr:\n%s)", tool, reply, p.stderr)
		}
		return res
	}
	textOf := func(res map[string]any) string { return res["content"].([]any)[0].(map[string]any)["text"].(string) }

	if res := call(2, "run_prompt", `{"prompt":"echo","args":"still served"}`); textOf(res) != "still served" || res["isError"] == true {
		t.Fatalf("the healthy prompt: %v", res)
	}
	listing := textOf(call(3, "list_prompts", `{}`))
	if !strings.Contains(listing, "upper") || !strings.Contains(listing, "Shouty") {
		t.Fatalf("list_prompts does not show the broken prompt with its problem:\n%s", listing)
	}
	if res := call(4, "run_prompt", `{"prompt":"upper"}`); res["isError"] != true || !strings.Contains(textOf(res), "Shouty") {
		t.Fatalf("the broken prompt was not refused with its problem: %v", res)
	}

	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v (stderr:\n%s)", err, p.stderr)
	}
	if n := strings.Count(p.stderr.String(), "a prompt is broken"); n != 1 || !strings.Contains(p.stderr.String(), "upper.md") {
		t.Fatalf("stderr should name the broken prompt once, named it %d times:\n%s", n, p.stderr)
	}

	var stderr bytes.Buffer
	cmd := exec.Command(binary(t), "check", path)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("check: %v, want exit 1", err)
	}
	for _, want := range []string{"catalog has 1 fault", "upper.md", "Shouty"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("check: stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// The model server starts after us, as an IDE starts the two (issue 10),
// through the built binary over stdio: a prose run while it is down says it
// is not reachable, and once it is up a run succeeds within 15 s without a
// restart. The binary keeps its real backoff (1 s doubling to 8 s), so the
// test calls again until the run succeeds or 15 s have passed; the
// in-process test in internal/app drives the same path with no waiting.
func TestBinaryUsesAModelServerThatStartsLate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	path := servertest.ConfigDir(t, "watch = false", nil, map[string]string{"speak.md": speakPrompt("speak")})
	conf := strings.Replace(string(mustRead(t, path)), "http://127.0.0.1:1/v1", "http://"+addr+"/v1", 1)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startStdio(t, path)
	p.send(initializeBody)
	p.recv()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 1
	speak := func() (string, bool) {
		t.Helper()
		id++
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"speak"}}}`, id))
		res := p.recv()["result"].(map[string]any)
		isErr, _ := res["isError"].(bool)
		return res["content"].([]any)[0].(map[string]any)["text"].(string), isErr
	}

	if text, isErr := speak(); !isErr || !strings.Contains(text, "the model server at http://"+addr+"/v1 is not reachable") {
		t.Fatalf("a run while the model server is down: %q (error %v)", text, isErr)
	}

	g := gatewaytest.NewAt(t, addr, "gw-key")
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply {
		return gatewaytest.Text("hello from the late model server")
	})
	up := time.Now()
	for {
		text, isErr := speak()
		if !isErr && text == "hello from the late model server" {
			t.Logf("the first run after the model server came up succeeded %v later", time.Since(up).Round(100*time.Millisecond))
			return
		}
		if time.Since(up) > 15*time.Second {
			t.Fatalf("no run succeeded within 15 s of the model server coming up; the last said %q (error %v)\nstderr:\n%s", text, isErr, p.stderr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
