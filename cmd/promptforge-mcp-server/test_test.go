package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTestCommandRunsTheExamples(t *testing.T) {
	for _, target := range []string{"../../examples/", "../../examples/prompts.toml"} {
		code, out, errOut := call(t, nil, "test", target)
		if code != exitOK || !strings.Contains(out, " 0 failed\n") || strings.Contains(out, "FAIL") {
			t.Fatalf("test %s: exit %d\nstdout:\n%s\nstderr:\n%s", target, code, out, errOut)
		}
	}
	code, out, _ := call(t, nil, "test", "-run", "unit_convert/unknown", "-v", "../../examples/")
	if code != exitOK || !strings.Contains(out, "--- PASS: unit_convert/unknown pair comes back as text") || !strings.HasSuffix(out, "\n1 passed, 0 failed\n") {
		t.Fatalf("-run: exit %d\n%s", code, out)
	}
}

func TestTestCommandFailsOnABrokenPrompt(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"text_stats.md", "text_stats.test.yaml"} {
		data, err := os.ReadFile(filepath.Join("../../examples/prompts", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "text_stats.md" {
			data = []byte(strings.Replace(string(data), `"character"`, `"char"`, 1))
		}
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	code, out, _ := call(t, nil, "test", dir)
	if code != exitFailure || !strings.Contains(out, "- 4 words, 23 characters, 2 lines\n    + 4 words, 23 chars, 2 lines") || !strings.HasSuffix(out, "0 passed, 3 failed\n") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if code, _, errOut := call(t, nil, "test", "-run", "(", dir); code != exitFailure || !strings.Contains(errOut, "not a regular expression") {
		t.Fatalf("bad -run: exit %d, %s", code, errOut)
	}
	if code, _, errOut := call(t, nil, "test", "-bogus"); code != exitUsage || !strings.Contains(errOut, "usage: promptforge-mcp-server test") {
		t.Fatalf("bad flag: exit %d, %s", code, errOut)
	}
}

func TestCommandHelpExitsZero(t *testing.T) {
	for cmd, want := range map[string]string{
		"run":   "--watch",
		"serve": "--stdio",
		"check": "--offline",
		"test":  "-update",
	} {
		for _, flag := range []string{"--help", "-h"} {
			code, out, errOut := call(t, nil, cmd, flag)
			if code != exitOK || !strings.HasPrefix(out, "usage: promptforge-mcp-server "+cmd) || !strings.Contains(out, want) || errOut != "" {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q", cmd, flag, code, out, errOut)
			}
		}
	}
	// After "--", --help is the prompt's args.
	if code, out, _ := call(t, nil, "run", "../../examples/prompts/text_stats.md", "--", "--help"); code != exitOK || out != "1 word, 6 characters, 1 line\n" {
		t.Fatalf("run -- --help: exit %d, %q", code, out)
	}
}

func TestCheckNamesPromptsWithoutTests(t *testing.T) {
	good := writeConfig(t, "", "", "", map[string]string{"echo.md": promptText("echo", "return args"), "greet.md": promptText("greet", "return 1")})
	os.WriteFile(filepath.Join(filepath.Dir(good), "prompts", "echo.test.yaml"), []byte("tests: [{name: a, args: x}]\n"), 0o644)
	code, out, errOut := call(t, nil, "check", "--offline", good)
	if code != exitOK || !strings.Contains(out, "note: 1 prompt(s) have no tests") || !strings.Contains(out, ": greet\n") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = call(t, nil, "check", "--offline", "../../examples/prompts.toml")
	if code != exitOK || strings.Contains(out, "no tests") {
		t.Fatalf("every example has tests: exit %d, %q", code, out)
	}
}
