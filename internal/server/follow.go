package server

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
)

// follow makes the MCP prompts and the prompt tools registered with the
// SDK match the current catalog generation: it adds what is new or
// changed and removes what is gone. The SDK then pages prompts/list and
// sends notifications/prompts/list_changed (and tools/list_changed when
// advertised) to every session, debounced, in both protocol eras (legacy
// sessions directly, stateless ones through subscriptions/listen).
//
// It runs once in New and then after every published reload
// (catalog.Handle.OnPublish), on the reloading goroutine. followMu makes
// two reloads finishing together apply one after the other; each reads
// the current generation, so the last one leaves the newest state.
//
// A reload that patched the catalog it last followed (a save under the
// watcher) says which entries changed (catalog.Catalog.Changes), and only
// those are compared: the whole catalog's JSON cost a one-file reload of
// 10,000 prompts far more than the reload itself.
func (s *Server) follow() {
	s.followMu.Lock()
	defer s.followMu.Unlock()
	cat := s.catalog.Current().Catalog()
	if added, dropped, ok := cat.Changes(s.followed); ok {
		s.followChanges(cat, added, dropped)
	} else {
		s.followAll(cat)
	}
	s.followed = cat
	s.followTools(cat)
}

// followAll compares every healthy entry of cat with what is registered.
func (s *Server) followAll(cat *catalog.Catalog) {
	prompts := make(map[string]string, cat.Len())
	var addPrompts []*mcp.Prompt
	for _, e := range cat.All() {
		// A broken prompt is not listed: a client would offer it as a
		// slash command that can only fail. list_prompts reports its
		// problem, and prompts/get by name answers with it.
		if e.Broken() {
			continue
		}
		p := mcpPrompt(e)
		sig := signature(p)
		prompts[e.Name()] = sig
		if s.promptSigs[e.Name()] != sig {
			addPrompts = append(addPrompts, p)
		}
	}
	s.registerPrompts(vanished(s.promptSigs, prompts), addPrompts)
	s.promptSigs = prompts
}

// followChanges is followAll for the entries a patch added and dropped,
// every other entry being the one already followed.
func (s *Server) followChanges(cat *catalog.Catalog, added, dropped []catalog.Entry) {
	var addPrompts []*mcp.Prompt
	for _, e := range added {
		if e.Broken() {
			continue
		}
		p := mcpPrompt(e)
		if sig := signature(p); s.promptSigs[e.Name()] != sig {
			s.promptSigs[e.Name()] = sig
			addPrompts = append(addPrompts, p)
		}
	}
	var gone []string
	for _, e := range dropped {
		if _, still := cat.Healthy(e.Name()); !e.Broken() && !still {
			delete(s.promptSigs, e.Name())
			gone = append(gone, e.Name())
		}
	}
	s.registerPrompts(gone, addPrompts)
}

// registerPrompts removes the MCP prompts named gone and adds (or
// replaces) add.
func (s *Server) registerPrompts(gone []string, add []*mcp.Prompt) {
	if len(gone) > 0 {
		s.mcp.RemovePrompts(gone...)
	}
	for _, p := range add {
		// The handler runs the live catalog's entry by name, whatever
		// this registration carried (see promptsGetMiddleware).
		s.mcp.AddPrompt(p, s.trackedGetPrompt)
	}
}

// followTools makes the prompt tools match cat's [catalog].tools.
func (s *Server) followTools(cat *catalog.Catalog) {
	tools := make(map[string]string, len(cat.Tools()))
	list := append([]*mcp.Tool(nil), s.builtins...)
	var addTools []*mcp.Tool
	for _, e := range cat.Tools() {
		t := promptTool(e)
		sig := signature(t)
		tools[e.Name()] = sig
		list = append(list, t)
		if s.toolSigs[e.Name()] != sig {
			addTools = append(addTools, t)
		}
	}
	if gone := vanished(s.toolSigs, tools); len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for _, t := range addTools {
		s.mcp.AddTool(t, s.calls.Track(s.runPromptTool))
	}
	s.toolSigs = tools
	s.toolList.Store(&list)
}

// vanished is the names in before that are not in after.
func vanished(before, after map[string]string) []string {
	var gone []string
	for name := range before {
		if _, ok := after[name]; !ok {
			gone = append(gone, name)
		}
	}
	return gone
}

// signature is what a reload compares to tell a changed prompt or tool
// from an unchanged one: its published JSON.
func signature(v any) string {
	b, err := marshal(v)
	if err != nil {
		// A prompt or tool built from strings always marshals.
		panic(err)
	}
	return string(b)
}
