package prompt

import (
	"errors"
	"fmt"
	"strings"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
	luaparse "github.com/yuin/gopher-lua/parse"
)

// compile turns one fence into a Chunk. The source is compiled behind
// (Line-1) blank lines so gopher-lua's own line numbers are file lines: a
// runtime error then reads "<name>:<file line>: ..." with no rewriting.
func (p *parser) compile(name string, f luaFence) (*Chunk, *ParseError) {
	p.observe(ObsLuaCompileStarted)
	src := string(p.src.doc[f.src:f.eos])
	ch := &Chunk{Name: name, Line: p.src.line(f.src), Source: strings.TrimSuffix(src, "\n")}
	proto, errLine, err := compileLua(name, strings.Repeat("\n", ch.Line-1)+src)
	if err != nil {
		p.observe(ObsLuaCompileFailed)
		if errLine == 0 {
			errLine = ch.Line
		}
		return nil, &ParseError{Kind: KindLua, Line: errLine, Err: err,
			Msg: fmt.Sprintf("lua compilation error at %s (line %d): %s", name, ch.Line, luaMessage(err))}
	}
	ch.Proto = proto
	p.observe(ObsLuaCompileSucceeded)
	return ch, nil
}

// compileLua parses and compiles src. It reports the line of a syntax
// error when gopher-lua knows it. gopher-lua signals some failures by
// panicking; those are turned into errors so Parse never panics.
func compileLua(name, src string) (proto *lua.FunctionProto, line int, err error) {
	defer func() {
		if r := recover(); r != nil {
			proto, err = nil, fmt.Errorf("the Lua compiler failed: %v", r)
		}
	}()
	stmts, err := luaparse.Parse(strings.NewReader(src), name)
	if err != nil {
		var pe *luaparse.Error
		if errors.As(err, &pe) && pe.Pos.Line > 0 {
			line = pe.Pos.Line
		}
		return nil, line, err
	}
	proto, err = lua.Compile(stmts, name)
	if err != nil {
		var ce *lua.CompileError
		if errors.As(err, &ce) && ce.Line > 0 {
			line = ce.Line
		}
		return nil, line, err
	}
	return proto, 0, nil
}

// luaMessage renders a gopher-lua compile error without repeating the chunk
// name, which the caller's message already carries.
func luaMessage(err error) string {
	var pe *luaparse.Error
	if errors.As(err, &pe) {
		msg := strings.TrimSpace(pe.Message)
		if pe.Pos.Line == luaparse.EOF {
			return msg + " at end of chunk"
		}
		return fmt.Sprintf("%s near '%s' (line %d, column %d)", msg, pe.Token, pe.Pos.Line, pe.Pos.Column)
	}
	var ce *lua.CompileError
	if errors.As(err, &ce) {
		return fmt.Sprintf("%s (line %d)", ce.Message, ce.Line)
	}
	return strings.TrimSpace(err.Error())
}
