package engine

// Declared input and output are the frontmatter's `input:` and `output:`
// files (prompt-language §4.5). Every host that runs a prompt applies the
// same rules to them, the MCP server and the run command alike, so they
// live here, below both, and each host only words its own read and write
// failures.

import (
	"errors"
	"fmt"

	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
)

// ErrInputUndeclared is returned by [SeedDeclaredInput] when input was given
// to a prompt whose frontmatter declares none. Its text is the one the
// reference pins for run_prompt's failed record (mcp-server appendix A);
// the run command replaces it with advice about --input.
var ErrInputUndeclared = errors.New("input_file or input_text was provided but the prompt declares no input")

// SeedDeclaredInput places the caller's input at p's declared input path.
// content is called only once p is known to declare an input, so a prompt
// without one is reported as [ErrInputUndeclared] before any file is read;
// an error from content is returned as is, so each front end words its own
// read failure (input_file for MCP callers, --input on the command line).
func SeedDeclaredInput(st *store.Store, p *prompt.Prompt, content func() (string, error)) error {
	decl := p.Frontmatter.Input
	if decl == nil {
		return ErrInputUndeclared
	}
	text, err := content()
	if err != nil {
		return err
	}
	if err := st.Write(decl.Path, text); err != nil {
		return fmt.Errorf("cannot seed store with declared input: %w", err)
	}
	return nil
}

// DeclaredOutput is what a completed run left at its prompt's declared
// output path (mcp-server §5.1, run body step 3).
type DeclaredOutput struct {
	// Path is the declared store path, "" when the prompt declares no
	// output: then the run's value is the whole answer.
	Path string
	// Content is the file's text when Produced.
	Content string
	// Produced reports whether the run wrote the declared file.
	Produced bool
}

// ExtractDeclaredOutput reads p's declared output from the run's store.
// A declared file the run never wrote is not an error (Produced is false:
// the front ends tell the operator in their own way); err is only a store
// failure other than the file being absent.
func ExtractDeclaredOutput(st *store.Store, p *prompt.Prompt) (DeclaredOutput, error) {
	decl := p.Frontmatter.Output
	if decl == nil {
		return DeclaredOutput{}, nil
	}
	out := DeclaredOutput{Path: decl.Path}
	content, err := st.Read(decl.Path, store.Range{})
	switch {
	case errors.Is(err, &store.Error{Kind: store.KindNotFound}):
		return out, nil
	case err != nil:
		return out, fmt.Errorf("read the declared output %q: %w", decl.Path, err)
	}
	out.Content, out.Produced = content, true
	return out, nil
}
