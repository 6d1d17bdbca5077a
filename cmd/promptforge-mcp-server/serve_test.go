package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

func TestParseServeFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  serveFlags
		usage bool
	}{
		{args: []string{"prompts.toml"}, want: serveFlags{configPath: "prompts.toml"}},
		{args: []string{"--stdio", "prompts.toml"}, want: serveFlags{stdio: true, configPath: "prompts.toml"}},
		{args: []string{"--log-level", "debug", "--stdio", "p.toml"}, want: serveFlags{stdio: true, logLevel: "debug", configPath: "p.toml"}},
		{args: []string{"--log-level=warn", "p.toml"}, want: serveFlags{logLevel: "warn", configPath: "p.toml"}},
		{args: []string{"--", "-odd.toml"}, want: serveFlags{configPath: "-odd.toml"}},
		{args: []string{"prompts.toml", "--stdio"}, usage: true},
		{args: []string{"prompts.toml", "extra"}, usage: true},
		{args: []string{"--stdio", "prompts.toml", "extra"}, usage: true},
		{args: []string{}, usage: true},
		{args: []string{"--stdio"}, usage: true},
		{args: []string{"--help"}, usage: true},
		{args: []string{"--log-level"}, usage: true},
	} {
		got, err := parseServeFlags(tc.args)
		if tc.usage {
			if _, ok := err.(usageError); !ok {
				t.Errorf("%q: got %+v, %v; want a usage error", tc.args, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
}

func TestServeUsageExitsTwo(t *testing.T) {
	for _, args := range [][]string{{"serve"}, {"serve", "--stdio"}, {"serve", "p.toml", "--stdio"}, {"--stdio", "p.toml"}, {"check"}, {"check", "a", "b"}} {
		code, out, errOut := call(t, nil, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "usage:") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestServeBootFailureReport(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "prompts.toml")
	code, out, errOut := call(t, nil, "serve", missing)
	if code != exitFailure || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(lines) < 3 || lines[0] != "error: load the configuration" || lines[1] != "  caused by: read config "+missing ||
		!strings.HasPrefix(lines[2], "  caused by: ") || len(lines[2]) <= len("  caused by: ") {
		t.Fatalf("report:\n%s", errOut)
	}
}

// writeConfig writes prompts.toml and a prompts directory of files.
func writeConfig(t *testing.T, serverLines, gatewayURL, gatewayKey string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	prompts := filepath.Join(dir, "prompts")
	if err := os.MkdirAll(prompts, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(prompts, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if gatewayURL == "" {
		gatewayURL, gatewayKey = "http://127.0.0.1:1/v1", "unused"
	}
	toml := fmt.Sprintf("[server]\n%s\n[paths]\nprompts = %q\n[gateway]\nurl = %q\napi_key = %q\n[catalog]\ninclude = [\"*.md\"]\n",
		serverLines, prompts, gatewayURL, gatewayKey)
	path := filepath.Join(dir, "prompts.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func promptText(name, lua string) string {
	return "---\nname: " + name + "\ndescription: The " + name + " prompt.\npromptforge: 1\n---\n# T\n\n## A\n\n```lua\n" + lua + "\n```\n"
}

func TestServeStdioThroughMain(t *testing.T) {
	path := writeConfig(t, "watch = false", "", "", map[string]string{"echo.md": promptText("echo", "return args")})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		lookup := func(string) (string, bool) { return "", false }
		done <- realMain(context.Background(), []string{"serve", "--stdio", path}, inR, outW, &stderr, lookup)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_prompt", Arguments: map[string]any{"prompt": "echo", "args": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("run_prompt: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != "hi" {
		t.Fatalf("text %q", text)
	}
	cs.Close()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "level=INFO") {
		t.Fatalf("no slog text lines on stderr:\n%s", stderr.String())
	}
}

func TestCheck(t *testing.T) {
	good := writeConfig(t, "", "", "", map[string]string{"echo.md": promptText("echo", "return args"), "greet.md": promptText("greet", "return 1")})
	code, out, errOut := call(t, nil, "check", "--offline", good)
	if code != exitOK || !strings.Contains(out, "2 prompt(s) resolve: echo, greet") || !strings.Contains(out, "[server].api_key is required") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	bad := writeConfig(t, `api_key = "k"`, "", "", map[string]string{
		"upper.md": promptText("Shouty", "return 1"),
		"list.md":  promptText("list_prompts", "return 1"),
	})
	code, out, errOut = call(t, nil, "check", bad)
	if code != exitFailure || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"error: resolve the prompt catalog", "catalog has 2 faults", "Shouty", "upper.md", "list_prompts", "reserved"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestRunWithConfig(t *testing.T) {
	g := gatewaytest.New(t)
	g.Enqueue(gatewaytest.Text("spoken through the config"))
	speak := "---\nname: speak\ndescription: Speak.\npromptforge: 1\n---\n# T\n\n```lua\nmodels.default('w', 'A general assistant model')\n```\n\n## A\n\nSay it.\n"
	path := writeConfig(t, "", g.URL(), g.APIKey(), map[string]string{
		"echo.md":  promptText("research_person", "return 'researched ' .. args"),
		"speak.md": speak,
		"bad.md":   "---\nname: bad\ndescription: x\npromptforge: 1\n---\nno heading\n",
	})
	for _, tc := range []struct {
		args []string
		code int
		out  string
		err  string
	}{
		{[]string{"run", "--config", path, "Research-Person", "Ada"}, exitOK, "researched Ada\n", ""},
		{[]string{"run", "--config", path, "speak"}, exitOK, "spoken through the config\n", ""},
		{[]string{"run", "--config", path, filepath.Join(filepath.Dir(path), "prompts", "echo.md"), "x"}, exitOK, "researched x\n", ""},
		{[]string{"run", "--config", path, "reseach_person"}, exitFailure, "", `closest first: research_person`},
		{[]string{"run", "--config", path, "bad"}, exitFailure, "", "does not parse"},
		{[]string{"run", "--config", filepath.Join(t.TempDir(), "none.toml"), "echo"}, exitFailure, "", "load the configuration"},
	} {
		code, out, errOut := call(t, nil, tc.args...)
		if code != tc.code || out != tc.out || !strings.Contains(errOut, tc.err) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
		}
	}
}

// A signal that arrives while the server is still booting is a clean
// stop, exit 0, not a failure report (B9).
func TestASignalDuringBootExitsZero(t *testing.T) {
	path := writeConfig(t, "watch = false", "", "", map[string]string{"echo.md": promptText("echo", "return args")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	lookup := func(string) (string, bool) { return "", false }
	code := realMain(ctx, []string{"serve", "--stdio", path}, strings.NewReader(""), &stdout, &stderr, lookup)
	if code != exitOK || strings.Contains(stderr.String(), "error:") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// The shipped example catalog resolves as its comments promise: its
// [paths].prompts = "prompts" is read from examples/, beside the file.
func TestCheckTheShippedExample(t *testing.T) {
	t.Chdir("../../examples")
	code, out, errOut := call(t, nil, "check", "--offline", "prompts.toml")
	if code != exitOK {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	// research_person is served: web_search goes to SearXNG.
	want := "prompts.toml: 6 prompt(s) resolve: digest, release_notes, research_person, summarize, text_stats, unit_convert\n"
	if !strings.HasPrefix(out, want) {
		t.Fatalf("stdout = %q, want it to start with %q", out, want)
	}
}

func TestCheckFlags(t *testing.T) {
	path := writeConfig(t, `api_key = "k"`, "", "", map[string]string{"echo.md": promptText("echo", "return args")})
	odd := filepath.Join(t.TempDir(), "-odd.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// writeConfig names the prompts directory by its absolute path, so the
	// copy resolves the same catalog from wherever it lies.
	if err := os.WriteFile(odd, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(odd))

	// A malformed env file beside a config draws a warning, which shows
	// at the default level and not at error.
	noisy := filepath.Join(filepath.Dir(odd), "noisy.toml")
	if err := os.WriteFile(noisy, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(odd), "noisy.env"), []byte("this is not an env line\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		args    []string
		environ map[string]string
		code    int
		stderr  string // substring; "" means stderr must be empty
	}{
		{"default level is quiet", []string{"check", "--offline", path}, nil, exitOK, ""},
		{"default level shows warnings", []string{"check", "--offline", noisy}, nil, exitOK, "level=WARN msg=\"ignoring env file that did not parse\""},
		{"--log-level error hides warnings", []string{"check", "--offline", "--log-level", "error", noisy}, nil, exitOK, ""},
		{"PROMPTFORGE_LOG=error hides warnings", []string{"check", "--offline", noisy}, map[string]string{"PROMPTFORGE_LOG": "error"}, exitOK, ""},
		{"--log-level debug is honoured", []string{"check", "--offline", "--log-level", "debug", path}, nil, exitOK, "level=DEBUG"},
		{"--log-level= form", []string{"check", "--offline", "--log-level=debug", path}, nil, exitOK, "level=DEBUG"},
		{"PROMPTFORGE_LOG is honoured", []string{"check", "--offline", path}, map[string]string{"PROMPTFORGE_LOG": "debug"}, exitOK, "level=DEBUG"},
		{"the flag wins over the environment", []string{"check", "--offline", "--log-level", "error", path}, map[string]string{"PROMPTFORGE_LOG": "debug"}, exitOK, ""},
		{"-- before a dash-led path", []string{"check", "--offline", "--", "./-odd.toml"}, nil, exitOK, ""},
		{"-- then a bare dash-led name", []string{"check", "--offline", "--", "-odd.toml"}, nil, exitOK, ""},
		{"a dash-led path without --", []string{"check", "-odd.toml"}, nil, exitUsage, "unknown flag \"-odd.toml\" for check"},
		{"--stdio is serve's", []string{"check", "--stdio", path}, nil, exitUsage, "unknown flag \"--stdio\" for check"},
		{"a bad level", []string{"check", "--log-level", "loud", path}, nil, exitUsage, "log level \"loud\""},
		{"a flag after the path", []string{"check", path, "--log-level", "debug"}, nil, exitUsage, "check takes one prompts.toml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := call(t, tc.environ, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %q, stderr:\n%s", code, tc.code, out, errOut)
			}
			if tc.stderr == "" && errOut != "" || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("stderr = %q, want %q", errOut, tc.stderr)
			}
			if code == exitOK && !strings.Contains(out, "1 prompt(s) resolve: echo") {
				t.Fatalf("stdout = %q", out)
			}
		})
	}
}
