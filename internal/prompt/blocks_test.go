package prompt

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

func TestH1BlocksWithSharedLibrary(t *testing.T) {
	body := "# T\n\n```lua\nx = 1\n```\n\nDescribe the task.\n\n```lua shared\nfunction helper() return 2 end\n```\n\n```lua\ny = helper()\n```\n## Run\nGo.\n"
	p := mustParse(t, body)
	if got := kinds(p.H1); got != "lua prose* lua" {
		t.Fatalf("H1 blocks %q, want lua prose* lua", got)
	}
	if p.H1[1].Text != "Describe the task." {
		t.Errorf("H1 prose %q", p.H1[1].Text)
	}
	for _, i := range []int{0, 2} {
		if name := p.H1[i].Lua.Name; name != "H1 `T` lua" {
			t.Errorf("H1 chunk name %q", name)
		}
	}
	if p.Shared == nil || p.Shared.Name != "prompt shared library" || p.Shared.Line != 15 ||
		p.Shared.Source != "function helper() return 2 end" || p.Shared.Proto == nil {
		t.Errorf("shared = %+v", p.Shared)
	}

	// A lone plain H1 fence is a live block, not a shared library.
	p = mustParse(t, "# T\n```lua\nx = 1\n```\n")
	if p.Shared != nil || kinds(p.H1) != "lua" {
		t.Errorf("shared %v, H1 %q", p.Shared, kinds(p.H1))
	}
}

func TestSharedFenceMisuse(t *testing.T) {
	tests := []struct{ name, body, msg string }{
		{"twice", "# T\n```lua shared\na = 1\n```\ntext\n```lua shared\nb = 1\n```\n", "prompt allows at most one `lua shared` fence"},
		{"under H2", "# T\n## Run\n```lua shared\na = 1\n```\n", "`lua shared` fence is allowed only in H1"},
		{"under H3", "# T\n## Run\n### Sub\n```lua shared\na = 1\n```\n", "`lua shared` fence is allowed only in H1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := wantParseErr(t, header+tt.body, KindFence, tt.msg)
			if pe.Msg != tt.msg {
				t.Errorf("message %q, want %q", pe.Msg, tt.msg)
			}
		})
	}
}

func TestRemovedLuaPromptForm(t *testing.T) {
	pe := wantParseErr(t, header+"# T\n\n\n```lua prompt\nx = 1\n```\n", KindFence, "`lua prompt` fence form was removed")
	if pe.Line != 9 || !strings.Contains(pe.Msg, "`lua shared`") {
		t.Errorf("line %d msg %q", pe.Line, pe.Msg)
	}
	// After prose, or in a section, it is ordinary prose.
	p := mustParse(t, "# T\nIntro.\n```lua prompt\nx = 1\n```\n## Run\n```lua prompt\ny = 2\n```\n")
	if kinds(p.H1) != "prose*" || !strings.Contains(p.H1[0].Text, "```lua prompt") {
		t.Errorf("H1 %q %q", kinds(p.H1), p.H1[0].Text)
	}
	if s := p.Sections[0]; kinds(s.Blocks) != "prose*" || !strings.Contains(s.Prose(), "y = 2") {
		t.Errorf("section %q %q", kinds(s.Blocks), s.Prose())
	}
}

func TestNearMissFencesStayProse(t *testing.T) {
	for _, opener := range []string{
		"```lua ", "```Lua", "````lua", " ```lua", "   ```lua", "```lua extra", "```python",
		"```lua  shared", "```lua shared extra", "```Lua shared", " ```lua shared", "~~~lua",
	} {
		closer := "```"
		switch strings.TrimSpace(opener)[:4] {
		case "````":
			closer = "````"
		case "~~~l":
			closer = "~~~"
		}
		t.Run(opener, func(t *testing.T) {
			p := mustParse(t, "# T\n```lua\nok = 1\n```\n"+opener+"\nnot = = lua\n"+closer+"\n## Run\n"+opener+"\nnot = = lua\n"+closer+"\n")
			if got := kinds(p.H1); got != "lua prose*" || !strings.Contains(p.H1[1].Text, "not = = lua") {
				t.Errorf("H1 blocks %q %q", got, p.H1[1].Text)
			}
			if p.Shared != nil {
				t.Error("near-miss became a shared library")
			}
			if got := kinds(p.Sections[0].Blocks); got != "prose*" {
				t.Errorf("section blocks %q", got)
			}
		})
	}
}

func TestMarkersInsideLongerFencesStayProse(t *testing.T) {
	body := "# T\n````markdown\n```lua shared\nnot = = lua\n```\n````\n## Run\n````\n```lua\nnot = = lua\n```\n---\n````\nAfter.\n"
	p := mustParse(t, body)
	if p.Shared != nil || kinds(p.H1) != "prose*" {
		t.Errorf("H1 %q shared %v", kinds(p.H1), p.Shared)
	}
	s := p.Sections[0]
	if kinds(s.Blocks) != "prose*" || !strings.HasSuffix(s.Prose(), "After.") || s.OffWalk {
		t.Errorf("section %q offwalk %v prose %q", kinds(s.Blocks), s.OffWalk, s.Prose())
	}
}

func TestMalformedLua(t *testing.T) {
	tests := []struct {
		name, body, location string
		first, errLine       int
	}{
		{"shared", "# T\n```lua shared\nlocal = 1\n```\n", "prompt shared library", 8, 8},
		{"H1", "# T\n```lua\nx = 1\ny = = 2\n```\n", "H1 `T` lua", 8, 9},
		{"prologue", "# T\n## Transform\n```lua\nx = (\n```\n", "section `Transform` prologue", 9, 0},
		{"epilog", "# T\n## Transform\nDo it.\n```lua\n\nif then\n```\n", "section `Transform` epilog", 10, 11},
		{"middle", "# T\n## Transform\n```lua\nx = 1\n```\nA.\n```lua\nx ==\n```\nB.\n", "section `Transform` lua", 13, 0},
		{"5.4 floor division", "# T\n## S\n```lua\nx = 7 // 2\n```\n", "section `S` prologue", 9, 9},
		{"compile stage", "# T\n## S\n```lua\nlocal a = 1\ngoto nowhere\n```\n", "section `S` prologue", 9, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := wantParseErr(t, header+tt.body, KindLua, "lua compilation error at "+tt.location+" (line ")
			prefix := "lua compilation error at " + tt.location + " (line " + strconv.Itoa(tt.first) + "): "
			if !strings.HasPrefix(pe.Msg, prefix) || len(pe.Msg) == len(prefix) {
				t.Errorf("message %q, want prefix %q and a Lua message", pe.Msg, prefix)
			}
			if pe.Err == nil || errors.Unwrap(pe) == nil {
				t.Error("the Lua error is not kept as the cause")
			}
			if tt.errLine != 0 && pe.Line != tt.errLine {
				t.Errorf("line %d, want %d", pe.Line, tt.errLine)
			}
		})
	}
}

func TestUnclosedFences(t *testing.T) {
	tests := []struct {
		name, body, msg string
		line            int
	}{
		{"prologue", "# T\n## S\n```lua\nx = 1\n", "section `S` prologue `lua` fence is not closed", 8},
		{"epilog", "# T\n## S\nText.\n```lua\nx = 1\n", "section `S` epilog `lua` fence is not closed", 9},
		{"plain", "# T\n## S\nText.\n```lua\nx = 1\n````\n```lua\ny = 2\n````\n", "section `S` `lua` fence is not closed", 9},
		{"stops at next heading", "# T\n## S\n```lua\nx = 1\n````\n## Next\n```\n", "section `S` prologue `lua` fence is not closed", 8},
		{"shared", "# T\n```lua shared\nx = 1\n", "prompt `lua shared` fence is not closed", 7},
		{"H1", "# T\n```lua\nx = 1\n``` \n", "H1 `T` `lua` fence is not closed", 7},
		{"comment rule ends region", "# T\n## S\nText.\n```lua\nx = 1\n````\n\n---\n```\n", "section `S` epilog `lua` fence is not closed", 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := wantParseErr(t, header+tt.body, KindFence, tt.msg)
			if pe.Msg != tt.msg || pe.Line != tt.line {
				t.Errorf("got %q at line %d, want %q at line %d", pe.Msg, pe.Line, tt.msg, tt.line)
			}
		})
	}
}

func TestNonExactCloseBeforeAnotherFence(t *testing.T) {
	// "``` " does not close the fence, so its Lua would run on through the
	// next opener to the first exact ```: that is a fence error naming the
	// near miss, as the reference reports it, not a Lua compile error.
	tests := []struct{ name, body, msg string }{
		{"trailing space", "# T\n## S\n```lua\nx = 1\n``` \n```lua\ny = 2\n```\n",
			"section `S` prologue `lua` fence is not closed exactly: line 10, \"``` \", is not ``` alone, so its Lua runs on into the fence at line 11; end the fence with a line that is exactly ```"},
		{"four backticks", "# T\n## S\nText.\n```lua\nx = 1\n````\nMore.\n```lua\ny = 2\n```\n",
			"section `S` `lua` fence is not closed exactly: line 11, \"````\", is not ``` alone, so its Lua runs on into the fence at line 13; end the fence with a line that is exactly ```"},
		{"indented", "# T\n```lua\nx = 1\n  ```\n```lua\ny = 2\n```\n",
			"H1 `T` `lua` fence is not closed exactly: line 9, \"  ```\", is not ``` alone, so its Lua runs on into the fence at line 10; end the fence with a line that is exactly ```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := wantParseErr(t, header+tt.body, KindFence, "fence is not closed exactly")
			if pe.Msg != tt.msg {
				t.Errorf("got  %q\nwant %q", pe.Msg, tt.msg)
			}
		})
	}
	// With no Lua fence after the near miss, the fence simply runs on to
	// the exact closer, and the stray line is Lua that does not compile.
	wantParseErr(t, header+"# T\n## S\n```lua\nx = 1\n``` \ny = 2\n```\n", KindLua, "lua compilation error at section `S` prologue (line 9)")
}

func TestBlockSplitting(t *testing.T) {
	tests := []struct {
		name, content, want string
		prose               []string
		names               []string
	}{
		{"prose only", "Just prose.", "prose*", []string{"Just prose."}, nil},
		{"empty section", "", "prose*", []string{""}, nil},
		{"prologue prose epilog", "\n\n```lua\na = 1\n```\nAsk.\n```lua\nb = 1\n```\n", "lua prose* lua", []string{"Ask."},
			[]string{"section `S` prologue", "section `S` epilog"}},
		{"epilog without prologue", "Ask.\n```lua\nb = 1\n```\n", "prose* lua", []string{"Ask."}, []string{"section `S` epilog"}},
		{"prologue only", "```lua\na = 1\n```\n", "lua", nil, []string{"section `S` prologue"}},
		{"prologue then prose", "```lua\na = 1\n```\nAsk.\n", "lua prose*", []string{"Ask."}, []string{"section `S` prologue"}},
		{"adjacent fences", "```lua\na = 1\n```\n```lua\nb = 1\n```\n", "lua prose* lua", []string{""},
			[]string{"section `S` prologue", "section `S` epilog"}},
		{"middle fences", "```lua\na = 1\n```\nOne.\n```lua\nb = 1\n```\nTwo.\n```lua\nc = 1\n```\n", "lua prose lua prose* lua",
			[]string{"One.", "Two."}, []string{"section `S` prologue", "section `S` lua", "section `S` epilog"}},
		{"blank trailing prose dropped", "Ask.\n```lua\nb = 1\n```\n\n   \n", "prose* lua", []string{"Ask."}, []string{"section `S` epilog"}},
		{"non-lua fence is prose", "```python\nprint(1)\n```\n", "prose*", []string{"```python\nprint(1)\n```"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "# T\n## S\n"+tt.content)
			s := p.Sections[0]
			if got := kinds(s.Blocks); got != tt.want {
				t.Fatalf("blocks %q, want %q", got, tt.want)
			}
			var prose, names []string
			for _, b := range s.Blocks {
				if b.Kind == BlockProse {
					prose = append(prose, b.Text)
				} else {
					names = append(names, b.Lua.Name)
				}
			}
			if strings.Join(prose, "|") != strings.Join(tt.prose, "|") || strings.Join(names, "|") != strings.Join(tt.names, "|") {
				t.Errorf("prose %q names %q, want %q %q", prose, names, tt.prose, tt.names)
			}
		})
	}
}

func TestH1SingleEmptyProseHasNoBlocks(t *testing.T) {
	for _, body := range []string{"# T\n## Run\n", "# T\n\n\n   \n## Run\n", "# T\n```lua shared\nx = 1\n```\n## Run\n"} {
		if p := mustParse(t, body); len(p.H1) != 0 {
			t.Errorf("%q: H1 blocks %q, want none", body, kinds(p.H1))
		}
	}
}

func TestBlockLines(t *testing.T) {
	p := mustParse(t, "# T\n## S\n\n```lua\na = 1\n```\n\n\nAsk\nmore.\n```lua\n```\n")
	s := p.Sections[0]
	if s.Blocks[0].Lua.Line != 10 || s.Blocks[0].Line != 10 {
		t.Errorf("prologue line %d", s.Blocks[0].Lua.Line)
	}
	if s.Blocks[1].Line != 14 || s.Blocks[1].Text != "Ask\nmore." {
		t.Errorf("prose line %d text %q", s.Blocks[1].Line, s.Blocks[1].Text)
	}
	if ep := s.Epilog(); ep == nil || ep.Source != "" || ep.Line != 17 {
		t.Errorf("empty epilog %+v", ep)
	}
}

// runChunk runs a compiled chunk in a bare VM (shared first, like a section
// VM would) and returns the error text.
func runChunk(t *testing.T, chunks ...*Chunk) string {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	for _, c := range chunks {
		L.Push(L.NewFunctionFromProto(c.Proto))
		if err := L.PCall(0, 0, nil); err != nil {
			return err.Error()
		}
	}
	t.Fatal("chunks ran without error")
	return ""
}

func TestLuaRuntimeErrorsUseFileLines(t *testing.T) {
	body := "# T\n" + // 6
		"```lua shared\n" + // 7
		"function fail(msg)\n" + // 8
		"  error(msg)\n" + // 9
		"end\n" + // 10
		"```\n" + // 11
		"## Transform\n" + // 12
		"```lua\n" + // 13
		"local a = 1\n" + // 14
		"error('in prologue')\n" + // 15
		"```\n" + // 16
		"Summarise.\n" + // 17
		"```lua\n" + // 18
		"local t = {}\n" + // 19
		"\n" + // 20
		"local x = t.missing.field\n" + // 21
		"```\n" + // 22
		"## Lib\n" + // 23
		"```lua\n" + // 24
		"fail('from shared')\n" + // 25
		"```\n"
	p := mustParse(t, body)
	tr := section(t, p, "Transform")
	tests := []struct {
		name   string
		chunks []*Chunk
		want   string
	}{
		{"prologue", []*Chunk{tr.Prologue()}, "section `Transform` prologue:15: in prologue"},
		{"epilog multi-line", []*Chunk{tr.Epilog()}, "section `Transform` epilog:21: "},
		{"shared library", []*Chunk{p.Shared, section(t, p, "Lib").Prologue()}, "prompt shared library:9: from shared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runChunk(t, tt.chunks...); !strings.Contains(got, tt.want) {
				t.Errorf("error %q does not contain %q", got, tt.want)
			}
		})
	}
}

func TestRuleMarker(t *testing.T) {
	t.Run("first rule makes the section off-walk", func(t *testing.T) {
		p := mustParse(t, "# T\n## Helper\n\n---\n\n```lua\nerror('x')\n```\nBelow.\n")
		s := p.Sections[0]
		if !s.OffWalk || kinds(s.Blocks) != "lua prose*" || s.Prose() != "Below." {
			t.Fatalf("offwalk %v blocks %q prose %q", s.OffWalk, kinds(s.Blocks), s.Prose())
		}
		if s.Prologue().Line != 12 || !strings.Contains(runChunk(t, s.Prologue()), "prologue:12:") {
			t.Errorf("line numbers moved: prologue line %d", s.Prologue().Line)
		}
	})
	t.Run("other rule styles", func(t *testing.T) {
		for _, rule := range []string{"***", "___", "- - -", "-----"} {
			p := mustParse(t, "# T\n## H\n"+rule+"\nBelow.\n")
			if !p.Sections[0].OffWalk {
				t.Errorf("%q did not mark off-walk", rule)
			}
		}
	})
	t.Run("later rule starts a comment region", func(t *testing.T) {
		p := mustParse(t, "# T\n## S\nLive.\n\n---\n\nReader note.\n```lua\nnot = = compiled\n```\n```lua shared\nx = 1\n```\n### Child\nChild text.\n")
		s := p.Sections[0]
		if s.OffWalk || kinds(s.Blocks) != "prose*" || s.Prose() != "Live." {
			t.Errorf("offwalk %v blocks %q prose %q", s.OffWalk, kinds(s.Blocks), s.Prose())
		}
		if c := section(t, p, "S", "Child"); c.Prose() != "Child text." {
			t.Errorf("heading after the comment lost: %q", c.Prose())
		}
	})
	t.Run("off-walk and comment compose", func(t *testing.T) {
		p := mustParse(t, "# T\n## S\n---\n```lua\nx = 1\n```\nLive.\n\n---\nComment.\n")
		s := p.Sections[0]
		if !s.OffWalk || kinds(s.Blocks) != "lua prose*" || s.Prose() != "Live." {
			t.Errorf("offwalk %v blocks %q prose %q", s.OffWalk, kinds(s.Blocks), s.Prose())
		}
	})
	t.Run("off-walk list section parses items below the marker", func(t *testing.T) {
		p := mustParse(t, "# T\n## Topics\n---\n- alpha\n- beta\n")
		s := p.Sections[0]
		if !s.OffWalk || strings.Join(s.Items, ",") != "alpha,beta" {
			t.Errorf("offwalk %v items %q", s.OffWalk, s.Items)
		}
	})
	t.Run("comment rule ends list items", func(t *testing.T) {
		p := mustParse(t, "# T\n## Topics\n- alpha\n- beta\n\n***\n\nNot an item, and not a list line.\n")
		if got := strings.Join(p.Sections[0].Items, ","); got != "alpha,beta" {
			t.Errorf("items %q", got)
		}
	})
	t.Run("H1 rule is a comment boundary", func(t *testing.T) {
		p := mustParse(t, "# T\n```lua\nx = 1\n```\nIntro.\n\n---\nNotes.\n```lua shared\nnot = = compiled\n```\n## Run\nGo.\n")
		if kinds(p.H1) != "lua prose*" || p.H1[1].Text != "Intro." || p.Shared != nil {
			t.Errorf("H1 %q %+v shared %v", kinds(p.H1), p.H1, p.Shared)
		}
	})
	t.Run("H1 rule first leaves no blocks", func(t *testing.T) {
		p := mustParse(t, "# T\n---\n```lua\nnot = = compiled\n```\n## Run\n")
		if len(p.H1) != 0 {
			t.Errorf("H1 %q", kinds(p.H1))
		}
	})
	t.Run("rule inside a fence is code", func(t *testing.T) {
		p := mustParse(t, "# T\n## S\n```lua\nlocal s = [[\n---\n]]\n```\nAsk.\n")
		s := p.Sections[0]
		if s.OffWalk || kinds(s.Blocks) != "lua prose*" || !strings.Contains(s.Prologue().Source, "---") {
			t.Errorf("offwalk %v blocks %q", s.OffWalk, kinds(s.Blocks))
		}
	})
	t.Run("setext underline is not a rule", func(t *testing.T) {
		p := mustParse(t, "# T\n## S\nIntro.\n\nSub\n---\nBody.\n")
		if len(p.Sections) != 2 || p.Sections[0].OffWalk || p.Sections[1].Name != "Sub" || p.Sections[1].OffWalk {
			t.Errorf("sections %+v", p.Sections)
		}
		if p.Sections[0].Prose() != "Intro." {
			t.Errorf("prose %q", p.Sections[0].Prose())
		}
	})
}

func TestListSections(t *testing.T) {
	tests := []struct {
		name, content string
		items         []string
	}{
		{"bullets", "- alpha\n- beta gamma\n\n* delta\n", []string{"alpha", "beta gamma", "delta"}},
		{"numbered", "1. one\n2) two\n10.  ten  \n", []string{"one", "two", "ten"}},
		{"inner text kept", "- **bold** `code` and: more\n", []string{"**bold** `code` and: more"}},
		{"plus is not a marker", "+ a\n+ b\n", nil},
		{"incidental bullet", "Consider these:\n- one\n", nil},
		{"no space after marker", "-a\n-b\n", nil},
		{"decimal", "1.5 apples\n", nil},
		{"prose", "Just text.\n", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "# T\n## L\n"+tt.content)
			s := p.Sections[0]
			if strings.Join(s.Items, "|") != strings.Join(tt.items, "|") || (tt.items == nil) != (s.Items == nil) {
				t.Errorf("items %q, want %q", s.Items, tt.items)
			}
			if kinds(s.Blocks) != "prose*" {
				t.Errorf("blocks %q: the list prose block must remain", kinds(s.Blocks))
			}
		})
	}

	t.Run("section with lua is not a list", func(t *testing.T) {
		p := mustParse(t, "# T\n## L\n```lua\nx = 1\n```\n- a\n- b\n")
		if p.Sections[0].Items != nil {
			t.Errorf("items %q", p.Sections[0].Items)
		}
	})
	t.Run("non-list H3 has no items", func(t *testing.T) {
		p := mustParse(t, "# T\n## A\n### B\nWrite something.\n")
		if section(t, p, "A", "B").Items != nil {
			t.Error("items on a prose H3")
		}
	})
	for _, bare := range []string{"-", "*", "1.", "1. ", "1)", "-   "} {
		t.Run("empty bullet "+bare, func(t *testing.T) {
			pe := wantParseErr(t, header+"# T\n## Topics\n- a\n"+bare+"\n- c\n", KindList, "empty bullet item in list section `Topics`")
			if pe.Line != 9 {
				t.Errorf("line %d, want 9", pe.Line)
			}
		})
	}
}

func TestParseObservations(t *testing.T) {
	var got []string
	_, err := ParseObserved([]byte(header+"# T\n```lua shared\nx = 1\n```\n## S\n```lua\ny = 1\n```\nSecret prose {{ args }}\n"), func(d string) {
		got = append(got, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ObsParseStarted,
		ObsLuaCompileStarted, ObsLuaCompileSucceeded,
		ObsLuaCompileStarted, ObsLuaCompileSucceeded,
		ObsParseSucceeded}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("observations\n%q\nwant\n%q", got, want)
	}

	got = nil
	_, err = ParseObserved([]byte(header+"# T\n## S\n```lua\ny = = 1\n```\n"), func(d string) { got = append(got, d) })
	if err == nil {
		t.Fatal("want an error")
	}
	want = []string{ObsParseStarted, ObsLuaCompileStarted, ObsLuaCompileFailed, ObsParseFailed}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("observations %q, want %q", got, want)
	}
}
