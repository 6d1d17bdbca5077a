package prompt

import (
	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

// A Prompt is one parsed prompt file. It is immutable after Parse returns, so
// one Prompt may back any number of concurrent runs.
type Prompt struct {
	Frontmatter Frontmatter

	// Title is the H1 heading text; TitleLine its 1-based file line.
	Title     string
	TitleLine int

	// H1 holds the live H1 blocks (Lua and prose) in file order. The
	// `lua shared` fence is not among them: it is Shared.
	H1 []Block

	// Shared is the `lua shared` library replayed at the start of every
	// section VM, or nil when the prompt has none.
	Shared *Chunk

	// Sections are the top-level (H2) sections in file order; deeper
	// levels hang off Section.Children.
	Sections []*Section
}

// Frontmatter is the YAML header of a prompt file.
type Frontmatter struct {
	Name        string
	Description string

	// Version is the declared `promptforge:` engine major; HasVersion
	// reports whether the key was present at all.
	Version    uint64
	HasVersion bool

	// MaxToolIterations is the declared cap on model rounds per
	// loop-capable prose block, or 0 when the key is absent (the runtime
	// default applies: see ResolveMaxToolIterations).
	MaxToolIterations int

	// Input and Output are the declared store files, nil when absent.
	Input  *FileDecl
	Output *FileDecl

	// Arguments are the declared typed arguments in file order; nil when
	// the prompt declares none and takes the one raw args string.
	Arguments []Argument
}

// FileDecl names a file in the run's store that a prompt expects
// (input) or leaves behind (output).
type FileDecl struct {
	Path        string `yaml:"path"`
	Description string `yaml:"description"`
}

// DefaultMaxToolIterations is the runtime default for max_tool_iterations.
const DefaultMaxToolIterations = 24

// ResolveMaxToolIterations returns the frontmatter value, or def when the
// key was absent.
func (f Frontmatter) ResolveMaxToolIterations(def int) int {
	if f.MaxToolIterations > 0 {
		return f.MaxToolIterations
	}
	return def
}

// A Section is one H2..H6 heading and its content.
type Section struct {
	Name  string
	Level int // 2..6
	Line  int // 1-based file line of the heading

	Blocks   []Block
	Children []*Section

	// Items are the pre-parsed entries of a list section (nil otherwise).
	Items []string

	// OffWalk is true when the section's content starts with a `---`
	// rule: fall-through skips it; it runs only when addressed.
	OffWalk bool
}

// BlockKind tells a Lua block from a prose block.
type BlockKind uint8

const (
	BlockLua BlockKind = iota + 1
	BlockProse
)

// A Block is one unit of a content region: an exact ```lua fence, or the
// prose between fences.
type Block struct {
	Kind BlockKind

	// Lua is set for BlockLua.
	Lua *Chunk

	// Text is the trimmed prose for BlockProse (may be empty). It is a
	// template: see Substitute.
	Text string
	// Line is the 1-based file line where the block's text starts.
	Line int
	// LoopCapable marks the last prose block of a region, which runs a
	// full tool loop; earlier prose blocks are single-shot.
	LoopCapable bool
}

// A Chunk is a compiled Lua block. Proto is shared, read-only, by every VM
// that runs the chunk.
type Chunk struct {
	// Name is the location used in messages, e.g. "section `Run` prologue".
	Name string
	// Line is the 1-based file line of the chunk's first Lua source line.
	Line   int
	Source string
	Proto  *lua.FunctionProto
}

// Prologue returns the section's first block when it is Lua, else nil.
func (s *Section) Prologue() *Chunk {
	if len(s.Blocks) > 0 && s.Blocks[0].Kind == BlockLua {
		return s.Blocks[0].Lua
	}
	return nil
}

// Epilog returns the section's last block when it is Lua and not the only
// block, else nil.
func (s *Section) Epilog() *Chunk {
	if n := len(s.Blocks); n > 1 && s.Blocks[n-1].Kind == BlockLua {
		return s.Blocks[n-1].Lua
	}
	return nil
}

// Prose returns the text of the loop-capable prose block, or "" when the
// section has none.
func (s *Section) Prose() string {
	for _, b := range s.Blocks {
		if b.LoopCapable {
			return b.Text
		}
	}
	return ""
}

// Walk calls fn for every section depth-first in file order (a section
// before its children) and stops early when fn returns false.
func (p *Prompt) Walk(fn func(*Section) bool) {
	var walk func([]*Section) bool
	walk = func(list []*Section) bool {
		for _, s := range list {
			if !fn(s) || !walk(s.Children) {
				return false
			}
		}
		return true
	}
	walk(p.Sections)
}
