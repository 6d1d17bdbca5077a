package engine_test

import (
	"errors"
	"testing"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
)

func declaring(t *testing.T, extra string) *prompt.Prompt {
	t.Helper()
	p, err := prompt.Parse([]byte("---\nname: p\ndescription: A prompt.\npromptforge: 1\n" + extra + "---\n# P\n\n## Run\n\n```lua\nreturn 1\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSeedDeclaredInput(t *testing.T) {
	declares := declaring(t, "input:\n  path: in/text.txt\n  description: the text\n")
	undeclared := declaring(t, "")
	readFailed := errors.New("the caller's file is gone")

	t.Run("seeds the declared path", func(t *testing.T) {
		st := store.New()
		if err := engine.SeedDeclaredInput(st, declares, func() (string, error) { return "héllo", nil }); err != nil {
			t.Fatal(err)
		}
		if got, err := st.Read("in/text.txt", store.Range{}); err != nil || got != "héllo" {
			t.Fatalf("store has %q, %v", got, err)
		}
	})
	t.Run("an undeclared input is refused before anything is read", func(t *testing.T) {
		st := store.New()
		err := engine.SeedDeclaredInput(st, undeclared, func() (string, error) {
			t.Error("content was read for a prompt that declares no input")
			return "", nil
		})
		if !errors.Is(err, engine.ErrInputUndeclared) || err.Error() != "input_file or input_text was provided but the prompt declares no input" {
			t.Fatalf("err = %v", err)
		}
		if len(st.Snapshot()) != 0 {
			t.Fatalf("store was written: %v", st.Snapshot())
		}
	})
	t.Run("a read failure is returned as the front end worded it", func(t *testing.T) {
		st := store.New()
		err := engine.SeedDeclaredInput(st, declares, func() (string, error) { return "", readFailed })
		if err != readFailed {
			t.Fatalf("err = %v, want the content func's own error", err)
		}
		if len(st.Snapshot()) != 0 {
			t.Fatalf("store was written: %v", st.Snapshot())
		}
	})
}

func TestExtractDeclaredOutput(t *testing.T) {
	declares := declaring(t, "output:\n  path: out.txt\n  description: the result\n")
	undeclared := declaring(t, "")
	for _, tc := range []struct {
		name  string
		p     *prompt.Prompt
		files map[string]string
		want  engine.DeclaredOutput
	}{
		{"no declared output", undeclared, map[string]string{"out.txt": "ignored"}, engine.DeclaredOutput{}},
		{"produced", declares, map[string]string{"out.txt": "the result\n"}, engine.DeclaredOutput{Path: "out.txt", Content: "the result\n", Produced: true}},
		{"produced empty", declares, map[string]string{"out.txt": ""}, engine.DeclaredOutput{Path: "out.txt", Produced: true}},
		{"not produced", declares, map[string]string{"other.txt": "x"}, engine.DeclaredOutput{Path: "out.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.New()
			if err := st.Seed(tc.files); err != nil {
				t.Fatal(err)
			}
			got, err := engine.ExtractDeclaredOutput(st, tc.p)
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
