// Package prompt turns the bytes of a PromptForge prompt file into an
// immutable [Prompt]: frontmatter, the H1 and its blocks, the section tree,
// compiled Lua chunks and list items. It also owns the {{ path }} template
// grammar (escapes, scanning, path validation, error format) and the
// rendering of JSON-shaped values into prose. It is pure: no I/O, no clock,
// no VM state, so a parsed Prompt can back any number of concurrent runs.
//
// Decisions worth knowing when reading the code:
//
//   - The body is parsed once with goldmark (CommonMark, no extensions).
//     Only document-level headings, rules and fences count: a heading
//     inside a block quote or list item is prose, not a section.
//   - The file is normalised first (BOM dropped, \r\n folded to \n); line
//     numbers are unchanged and [ParseError.Span] maps back to the original
//     bytes.
//   - Each Lua chunk is compiled behind (Line-1) blank lines, so the line
//     numbers gopher-lua reports at run time are already file lines and a
//     runtime error reads "<chunk name>:<file line>: <message>" without
//     any rewriting by the engine.
//   - gopher-lua is Lua 5.1: 5.4-only syntax such as // is a compile error.
package prompt
