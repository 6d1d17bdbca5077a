package catalog

import (
	"path"
	"slices"
	"strings"

	"github.com/promptforge-go/promptforge/internal/names"
)

// publishTools records the [catalog].tools globs and the healthy entries
// they match. A broken prompt is never a tool: its schema cannot be built
// and a tool that only ever fails is noise in every client's tool list
// (list_prompts and run_prompt still report its problem). Resolution has
// already refused a malformed glob.
func (c *Catalog) publishTools(patterns []string) {
	c.toolPatterns = slices.Clone(patterns)
	if len(patterns) == 0 {
		return
	}
	for _, e := range c.entries {
		if isTool(e.e, patterns) {
			c.tools = append(c.tools, e)
		}
	}
}

// isTool reports whether the [catalog].tools patterns publish e as a tool.
func isTool(e *entry, patterns []string) bool {
	// No prompt takes a reserved name, so no tool shadows a built-in;
	// checked again here because the tool namespace is the one place a
	// clash would be silent.
	if e.kind != 0 || names.IsReserved(e.name) {
		return false
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, e.name); ok {
			return true
		}
	}
	return false
}

// ToolPatterns are the [catalog].tools globs this catalog was resolved
// with; empty when the setting is not used.
func (c *Catalog) ToolPatterns() []string { return slices.Clone(c.toolPatterns) }

// Tools are the healthy prompts [catalog].tools names, in catalog (name)
// order: each is also published as an MCP tool named after the prompt.
// The slice is shared and must not be modified.
func (c *Catalog) Tools() []Entry { return c.tools }

// Tool is the prompt published as the tool name, false when no prompt of
// this catalog is one.
func (c *Catalog) Tool(name string) (Entry, bool) {
	i, ok := slices.BinarySearchFunc(c.tools, name, func(e Entry, n string) int { return strings.Compare(e.Name(), n) })
	if !ok {
		return Entry{}, false
	}
	return c.tools[i], true
}
