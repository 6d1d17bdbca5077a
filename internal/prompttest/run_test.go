package prompttest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// write puts files (name → content) in a fresh directory and returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func run(t *testing.T, opts Options) (Summary, string) {
	t.Helper()
	var out bytes.Buffer
	opts.Out = &out
	sum, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	return sum, out.String()
}

const echoPrompt = `---
name: echo
description: Asks the model once.
promptforge: 1
---

# Echo

` + "```lua\nmodels.default(\"m\", \"A model for echoing text\")\n```" + `

## Ask

Repeat: {{ args }}
`

func TestExamplesPass(t *testing.T) {
	files, err := Find([]string{"../../examples"})
	if err != nil {
		t.Fatal(err)
	}
	prompts, _ := filepath.Glob("../../examples/prompts/*.md")
	if len(files) != len(prompts) {
		t.Fatalf("%d example prompts but %d test files: every example ships with tests", len(prompts), len(files))
	}
	sum, out := run(t, Options{Files: files})
	if sum.Failed != 0 || sum.Passed < len(files) {
		t.Fatalf("examples: %+v\n%s", sum, out)
	}
}

func TestABrokenPromptFailsWithADiff(t *testing.T) {
	src, err := os.ReadFile("../../examples/prompts/text_stats.md")
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("../../examples/prompts/text_stats.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(src), `count(c.words, "word")`, `count(c.words, "wrd")`, 1)
	dir := write(t, map[string]string{"text_stats.md": broken, "text_stats.test.yaml": string(tests)})
	sum, out := run(t, Options{Files: []string{filepath.Join(dir, "text_stats.test.yaml")}, Run: regexp.MustCompile("lines$")})
	if sum.Failed != 1 || sum.Passed != 0 {
		t.Fatalf("want 1 failure, got %+v\n%s", sum, out)
	}
	for _, want := range []string{
		"--- FAIL: text_stats/counts words characters and lines",
		"value (-want +got):",
		"- 4 words, 23 characters, 2 lines",
		"+ 4 wrds, 23 characters, 2 lines",
		"FAIL " + filepath.Join(dir, "text_stats.test.yaml"),
		"0 passed, 1 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestUpdateRecordsThenPasses(t *testing.T) {
	dir := write(t, map[string]string{"echo.md": echoPrompt, "echo.test.yaml": `tests:
  - name: echoes
    args: hi
    replies:
      - text: "hi there"
    expect:
      requests:
        - turn: 1
          contains: ["Repeat: hi"]
`})
	tf := filepath.Join(dir, "echo.test.yaml")
	if sum, out := run(t, Options{Files: []string{tf}, Update: true}); sum.Failed != 0 {
		t.Fatalf("update: %+v\n%s", sum, out)
	}
	f, err := Load(tf)
	if err != nil {
		t.Fatal(err)
	}
	e := f.Tests[0].Expect
	if e.Value == nil || *e.Value != "hi there" || len(e.Requests) != 1 {
		t.Fatalf("recorded %+v", e)
	}
	// The recorded expectation now checks: another reply fails.
	data, _ := os.ReadFile(tf)
	os.WriteFile(tf, bytes.Replace(data, []byte(`text: hi there`), []byte(`text: bye`), 1), 0o644)
	sum, out := run(t, Options{Files: []string{tf}})
	if sum.Failed != 1 || !strings.Contains(out, "- hi there\n") || !strings.Contains(out, "+ bye\n") {
		t.Fatalf("want a value diff, got %+v\n%s", sum, out)
	}
}

func TestScriptAndRequestChecks(t *testing.T) {
	dir := write(t, map[string]string{"echo.md": echoPrompt, "echo.test.yaml": `tests:
  - name: too many replies
    args: hi
    replies: [{text: a}, {text: b}]
  - name: too few replies
    args: hi
    expect: {error: "no_scripted_reply"}
  - name: request checks
    args: hi
    replies: [{text: a}]
    expect:
      value: a
      requests:
        - turn: 1
          contains: ["Repeat: ho"]
          tools: [convert]
        - turn: 2
  - name: model error
    args: hi
    replies: [{status: 500, body: '{"error":{"message":"boom"}}'}]
    expect: {error: "500"}
`})
	sum, out := run(t, Options{Files: []string{filepath.Join(dir, "echo.test.yaml")}})
	if sum.Failed != 3 || sum.Passed != 1 {
		t.Fatalf("want 3 failed, 1 passed: %+v\n%s", sum, out)
	}
	for _, want := range []string{
		"only 1 of the 2 scripted replies were used",
		"the prompt made 1 chat requests but the test scripts 0 replies",
		`request 1: no message contains "Repeat: ho"`,
		"user: Repeat: hi",
		`request 1: tool "convert" was not offered`,
		"request 2: the model received 1 requests",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestScriptedToolsAndStore(t *testing.T) {
	prompt := `---
name: look
description: Looks something up.
promptforge: 1
---

# Look

` + "```lua\ntools.need(\"lookup\", \"Look a word up in the dictionary\")\nmodels.default(\"m\", \"A model for answering\")\n```" + `

## Ask

` + "```lua\ntools.add({\"lookup\"})\n```" + `

Define: {{ args }}

` + "```lua\nstore.write(\"answer.txt\", reply)\n```\n"
	dir := write(t, map[string]string{"look.md": prompt, "look.test.yaml": `tests:
  - name: calls the tool
    args: cat
    replies:
      - calls: [{name: lookup, args: {word: cat}}]
      - text: "A small feline."
    tools:
      lookup: ["cat: a small domesticated feline", "unused"]
    expect:
      store: {answer.txt: "A small feline!", extra.txt: "x"}
      requests:
        - turn: 2
          contains: ["small domesticated feline"]
`})
	sum, out := run(t, Options{Files: []string{filepath.Join(dir, "look.test.yaml")}})
	if sum.Failed != 1 {
		t.Fatalf("want a failure: %+v\n%s", sum, out)
	}
	for _, want := range []string{
		"store: answer.txt (-want +got):\n    - A small feline!\n    + A small feline.",
		"store: extra.txt was not written",
		`tool "lookup": 1 scripted results were not used`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "request 2") {
		t.Errorf("the tool's result should have reached the model:\n%s", out)
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown key":  {"tests:\n  - name: a\n    expct: {}\n", "expct"},
		"no tests":     {"tests: []\n", "holds no tests"},
		"no name":      {"tests:\n  - args: x\n", "has no name"},
		"twice":        {"tests:\n  - name: a\n  - name: a\n", "two tests are named"},
		"bad reply":    {"tests:\n  - name: a\n    replies: [{}]\n", "exactly one of text, calls or status"},
		"args, params": {"tests:\n  - name: a\n    args: x\n    params: {y: 1}\n", "both args and params"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := write(t, map[string]string{"x.test.yaml": tc.yaml})
			_, err := Load(filepath.Join(dir, "x.test.yaml"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestFind(t *testing.T) {
	dir := write(t, map[string]string{"a.md": echoPrompt, "a.test.yaml": "", "b.md": echoPrompt})
	for _, skipped := range []string{".git", "node_modules"} {
		os.Mkdir(filepath.Join(dir, skipped), 0o755)
		os.WriteFile(filepath.Join(dir, skipped, "x.test.yaml"), nil, 0o644)
	}
	got, err := Find([]string{dir, filepath.Join(dir, "a.md")})
	if err != nil || len(got) != 1 || got[0] != filepath.Join(dir, "a.test.yaml") {
		t.Fatalf("Find = %v, %v", got, err)
	}
	if _, err := Find([]string{filepath.Join(dir, "b.md")}); err == nil || !strings.Contains(err.Error(), "has no tests") {
		t.Fatalf("a prompt without tests: %v", err)
	}
	// A path that does not exist (a typo) says what a path may be.
	if _, err := Find([]string{filepath.Join(dir, "nope")}); err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "give a directory, a prompt") {
		t.Fatalf("a missing path: %v", err)
	}
}

func TestDiff(t *testing.T) {
	got := Diff("a\nb\nc", "a\nx\nc\n")
	want := "  a\n- b\n+ x\n  c\n+ ⏎ (final newline)\n"
	if got != want {
		t.Fatalf("Diff:\n%s\nwant:\n%s", got, want)
	}
}

func TestTypedArgumentsAndInputFile(t *testing.T) {
	prompt := `---
name: typed
description: Typed arguments and a declared input.
promptforge: 1
arguments:
  - name: times
    type: integer
    description: How many times.
input:
  path: in.txt
  description: Some text.
---

# Typed

## Run

` + "```lua\nreturn string.rep(store.read(\"in.txt\"), params.times)\n```\n"
	dir := write(t, map[string]string{"typed.md": prompt, "in.txt": "ab", "typed.test.yaml": `tests:
  - name: repeats the input
    params: {times: 3}
    input_file: in.txt
    expect: {value: ababab}
  - name: args are refused
    args: "3"
  - name: a wrong type is refused
    params: {times: "x"}
`})
	var out bytes.Buffer
	_, err := Run(t.Context(), Options{Files: []string{filepath.Join(dir, "typed.test.yaml")}, Run: regexp.MustCompile("repeats"), Out: &out})
	if err != nil || !strings.Contains(out.String(), "1 passed, 0 failed") {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	// Tests that cannot run are failures of their own, reported with why.
	sum, report := run(t, Options{Files: []string{filepath.Join(dir, "typed.test.yaml")}, Run: regexp.MustCompile("args|wrong")})
	if sum.Failed != 2 {
		t.Fatalf("want 2 failures: %+v\n%s", sum, report)
	}
	for _, want := range []string{"--- FAIL: typed/args are refused", "the test cannot run: the prompt takes typed arguments", "set params, not args", "--- FAIL: typed/a wrong type is refused", "times"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}
