package prompttest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
)

// Suffix ends the name of a test file: the tests of prompt NAME.md are in
// NAME.test.yaml beside it.
const Suffix = ".test.yaml"

// File is one test file: the tests of one prompt.
type File struct {
	// Path is the test file as found.
	Path string `yaml:"-"`
	// Prompt is the prompt file, relative to the test file's directory;
	// "" is the test file's stem with ".md".
	Prompt string `yaml:"prompt,omitempty"`
	Tests  []Test `yaml:"tests"`
}

// Test is one scripted run of the prompt and what it must produce.
type Test struct {
	Name string `yaml:"name"`
	// Args is the prompt's args string; Params its typed arguments (a
	// prompt with `arguments:` takes these instead).
	Args   string         `yaml:"args,omitempty"`
	Params map[string]any `yaml:"params,omitempty"`
	// Input is the declared input's content; InputFile names a file
	// (relative to the test file) holding it.
	Input     *string `yaml:"input,omitempty"`
	InputFile string  `yaml:"input_file,omitempty"`
	// Models replaces the served model list; by default one model is
	// served per model need of the prompt's H1, described as the need is.
	Models []Model `yaml:"models,omitempty"`
	// Replies are the model's answers, one per chat request, in order.
	Replies []Reply `yaml:"replies,omitempty"`
	// Tools scripts the live tools the H1 needs, by alias: each call takes
	// the next result.
	Tools  map[string][]string `yaml:"tools,omitempty"`
	Expect Expect              `yaml:"expect"`
}

// Model is one served model.
type Model struct {
	ID          string `yaml:"id"`
	Description string `yaml:"description"`
}

// Reply is one scripted model reply: text, tool calls, or an HTTP error.
type Reply struct {
	Text   *string `yaml:"text,omitempty"`
	Calls  []Call  `yaml:"calls,omitempty"`
	Status int     `yaml:"status,omitempty"`
	Body   string  `yaml:"body,omitempty"`
}

// Call is one tool call in a reply.
type Call struct {
	Name string         `yaml:"name"`
	Args map[string]any `yaml:"args,omitempty"`
}

// Expect is what a run must produce. Unset fields are not checked.
type Expect struct {
	// Value is the run's value, exactly (the declared output's content
	// when the prompt declares one and produced it).
	Value *string `yaml:"value,omitempty"`
	// Error is a substring of the run's error; set, the run must fail.
	// Unset, the run must succeed.
	Error *string `yaml:"error,omitempty"`
	// Store is every file the run's store holds at its end, exactly.
	Store map[string]string `yaml:"store,omitempty"`
	// Requests are checks on the chat requests the model received.
	Requests []RequestCheck `yaml:"requests,omitempty"`
}

// RequestCheck is a check on one chat request (Turn, 1-based, in the order
// they reached the gateway).
type RequestCheck struct {
	Turn int `yaml:"turn"`
	// Contains are strings some message of the request must contain.
	Contains []string `yaml:"contains,omitempty"`
	// Tools are tool names the request must offer the model.
	Tools []string `yaml:"tools,omitempty"`
}

// Load reads and checks one test file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the test file: %w", err)
	}
	var f File
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.DisallowUnknownField(), yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %s (the format is in docs/testing-prompts.md)", path, yaml.FormatError(err, false, true))
	}
	f.Path = path
	if len(f.Tests) == 0 {
		return nil, fmt.Errorf("%s holds no tests: add at least one under `tests:`", path)
	}
	seen := map[string]bool{}
	for i, t := range f.Tests {
		switch {
		case strings.TrimSpace(t.Name) == "":
			return nil, fmt.Errorf("%s: test %d has no name: give each test a `name:`", path, i+1)
		case seen[t.Name]:
			return nil, fmt.Errorf("%s: two tests are named %q: names must be unique in a file", path, t.Name)
		case t.Args != "" && t.Params != nil:
			return nil, fmt.Errorf("%s: test %q sets both args and params: a prompt takes one or the other", path, t.Name)
		case t.Input != nil && t.InputFile != "":
			return nil, fmt.Errorf("%s: test %q sets both input and input_file: keep one", path, t.Name)
		}
		seen[t.Name] = true
		for j, r := range t.Replies {
			kinds := 0
			if r.Text != nil {
				kinds++
			}
			if len(r.Calls) > 0 {
				kinds++
			}
			if r.Status != 0 {
				kinds++
			}
			if kinds != 1 {
				return nil, fmt.Errorf("%s: test %q reply %d must set exactly one of text, calls or status", path, t.Name, j+1)
			}
		}
	}
	return &f, nil
}

// PromptPath is the prompt file f tests.
func (f *File) PromptPath() string {
	if f.Prompt != "" {
		return filepath.Join(filepath.Dir(f.Path), f.Prompt)
	}
	return strings.TrimSuffix(f.Path, Suffix) + ".md"
}

// For is the test file of the prompt file at path.
func For(promptPath string) string {
	return strings.TrimSuffix(promptPath, ".md") + Suffix
}

// Has reports whether the prompt file at path has a test file beside it.
func Has(promptPath string) bool {
	_, err := os.Stat(For(promptPath))
	return err == nil
}

// Find lists the test files under each path: a directory is walked for
// files ending in Suffix, a prompt file (.md) names its test file (which
// must exist), and a test file is itself. The list is sorted and has no
// duplicates.
func Find(paths []string) ([]string, error) {
	set := map[string]bool{}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("find prompt tests: %w; give a directory, a prompt (.md), a test file (%s) or a prompts.toml that exists", err, Suffix)
		}
		switch {
		case info.IsDir():
			err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				// Hidden directories (.git, a store dump's .trace) and
				// node_modules hold no prompts of ours.
				if d.IsDir() && path != p && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
					return filepath.SkipDir
				}
				if !d.IsDir() && strings.HasSuffix(path, Suffix) {
					set[path] = true
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("find prompt tests under %s: %w", p, err)
			}
		case strings.HasSuffix(p, Suffix):
			set[p] = true
		case strings.HasSuffix(p, ".md"):
			tf := For(p)
			if _, err := os.Stat(tf); err != nil {
				return nil, fmt.Errorf("prompt %s has no tests: write them in %s (docs/testing-prompts.md)", p, tf)
			}
			set[tf] = true
		default:
			return nil, fmt.Errorf("%s is neither a directory, a prompt (.md), a test file (%s) nor a prompts.toml", p, Suffix)
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// save writes f back, as -update does. Comments are not kept: the file is
// marshalled again from its values.
func (f *File) save() error {
	var buf bytes.Buffer
	buf.WriteString("# Prompt tests (docs/testing-prompts.md); expectations recorded by -update.\n")
	data, err := yaml.MarshalWithOptions(f, yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return fmt.Errorf("encode %s: %w", f.Path, err)
	}
	// goccy/go-yaml indents the blank lines of a literal block; trimmed,
	// they read the same and diff cleanly, unless a line was only spaces
	// in the value itself, which the round trip below catches.
	if trimmed := trimSpaceLines(data); sameTests(trimmed, f) {
		data = trimmed
	}
	buf.Write(data)
	tmp := f.Path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("update %s: %w", f.Path, err)
	}
	if err := os.Rename(tmp, f.Path); err != nil {
		return errors.Join(fmt.Errorf("update %s: %w", f.Path, err), os.Remove(tmp))
	}
	return nil
}

// trimSpaceLines empties the lines of data that hold only spaces.
func trimSpaceLines(data []byte) []byte {
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimLeft(l, " ")) == 0 {
			lines[i] = nil
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// sameTests reports whether data decodes to f's tests.
func sameTests(data []byte, f *File) bool {
	var back File
	if err := yaml.Unmarshal(data, &back); err != nil {
		return false
	}
	return reflect.DeepEqual(back.Tests, f.Tests)
}
