package server

import (
	"errors"
	"testing"

	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
)

func parsed(t *testing.T, extra string) *prompt.Prompt {
	t.Helper()
	p, err := prompt.Parse([]byte(promptFile("p", "A prompt.", extra, "# P\n\n## Run\n\n```lua\nreturn 1\n```\n")))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSeedDeclaredInput(t *testing.T) {
	declares := parsed(t, "input:\n  path: in/text.txt\n  description: the text\n")
	undeclared := parsed(t, "")
	readFailed := errors.New("the caller's file is gone")

	t.Run("seeds the declared path", func(t *testing.T) {
		st := store.New()
		if err := SeedDeclaredInput(st, declares, func() (string, error) { return "héllo", nil }); err != nil {
			t.Fatal(err)
		}
		if got, err := st.Read("in/text.txt", store.Range{}); err != nil || got != "héllo" {
			t.Fatalf("store has %q, %v", got, err)
		}
	})
	t.Run("an undeclared input is refused before anything is read", func(t *testing.T) {
		st := store.New()
		err := SeedDeclaredInput(st, undeclared, func() (string, error) {
			t.Error("content was read for a prompt that declares no input")
			return "", nil
		})
		if !errors.Is(err, ErrInputUndeclared) || err.Error() != msgInputUndeclared {
			t.Fatalf("err = %v", err)
		}
		if len(st.Snapshot()) != 0 {
			t.Fatalf("store was written: %v", st.Snapshot())
		}
	})
	t.Run("a read failure is returned as the front end worded it", func(t *testing.T) {
		st := store.New()
		err := SeedDeclaredInput(st, declares, func() (string, error) { return "", readFailed })
		if err != readFailed {
			t.Fatalf("err = %v, want the content func's own error", err)
		}
		if len(st.Snapshot()) != 0 {
			t.Fatalf("store was written: %v", st.Snapshot())
		}
	})
}

func TestExtractDeclaredOutput(t *testing.T) {
	declares := parsed(t, "output:\n  path: out.txt\n  description: the result\n")
	undeclared := parsed(t, "")
	for _, tc := range []struct {
		name  string
		p     *prompt.Prompt
		files map[string]string
		want  DeclaredOutput
	}{
		{"no declared output", undeclared, map[string]string{"out.txt": "ignored"}, DeclaredOutput{}},
		{"produced", declares, map[string]string{"out.txt": "the result\n"}, DeclaredOutput{Path: "out.txt", Content: "the result\n", Produced: true}},
		{"produced empty", declares, map[string]string{"out.txt": ""}, DeclaredOutput{Path: "out.txt", Produced: true}},
		{"not produced", declares, map[string]string{"other.txt": "x"}, DeclaredOutput{Path: "out.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.New()
			if err := st.Seed(tc.files); err != nil {
				t.Fatal(err)
			}
			got, err := ExtractDeclaredOutput(st, tc.p)
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
