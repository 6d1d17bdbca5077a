package engine

import (
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// lua wraps source in an exact lua fence.
func lua(src string) string { return "```lua\n" + src + "\n```\n" }

// trace is the store file sections append their steps to.
func trace(t *testing.T, r result) string {
	t.Helper()
	s, err := r.st.Read("trace", storeAll)
	if err != nil {
		return ""
	}
	return s
}

func mark(name string) string { return lua(`store.append("trace", "` + name + `;")`) }

// prompt-language §8.6 Control flow.

func TestControl_FallThroughReturnAndDone(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`store.append("trace", "A" .. sys.id .. ";")`)+
		"\n## B\n\n"+lua(`store.append("trace", "B" .. sys.id .. ";") return "from B"`)+
		"\n## C\n\n"+lua(`store.append("trace", "C;")`))
	r := runP(t, p, "", Options{})
	r.ok(t, "from B")
	if got := trace(t, r); got != "A1;B2;" {
		t.Fatalf("trace = %q", got)
	}
	p = parse(t, "# T\n\n## A\n\n"+lua(`local x = 1`)+"\n## B\n\n"+lua(`local y = 2`))
	runP(t, p, "", Options{}).ok(t, "done")
}

func TestControl_H1Only(t *testing.T) {
	runP(t, parse(t, "# T\n\n"+lua(`return "h1 " .. sys.id`)), "", Options{}).ok(t, "h1 0")
	runP(t, parse(t, "# T\n\n"+lua(`local x = 1`)), "", Options{}).ok(t, "done")
	runP(t, parse(t, "# T\n"), "", Options{}).ok(t, "done")
	// An H1 return skips the sections.
	runP(t, parse(t, "# T\n\n"+lua(`return "early"`)+"\n## A\n\n"+lua(`return "late"`)), "", Options{}).ok(t, "early")
}

func TestControl_VersionGate(t *testing.T) {
	body := "# T\n\n## A\n\n" + lua(`return "ran"`)
	runP(t, parse(t, "---\nname: t\ndescription: d\npromptforge: 1\n---\n"+body), "", Options{}).ok(t, "ran")
	r := runP(t, parse(t, "---\nname: t\ndescription: d\npromptforge: 2\n---\n"+body), "", Options{})
	r.fails(t, KindVersion, "unsupported promptforge version: 2 (this build supports major 1)")
	if len(r.rec.lines()) != 0 {
		t.Fatalf("refusal was observed: %v", r.rec.lines())
	}
	r = runP(t, parse(t, "---\nname: t\ndescription: d\n---\n"+body), "", Options{})
	r.fails(t, KindParse, "not a promptforge prompt")
	if len(r.rec.lines()) != 0 {
		t.Fatalf("refusal was observed: %v", r.rec.lines())
	}
}

func TestControl_AlternatingBlocks(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("first reply"), gatewaytest.Text("second reply"))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+
		lua(`store.append("trace", "pro:" .. tostring(reply) .. ";")`)+
		"\nFirst prose.\n\n"+
		lua(`store.append("trace", "mid:" .. reply .. ";")`)+
		"\nSecond prose sees {{ reply }}.\n\n"+
		lua(`store.append("trace", "epi:" .. reply .. ";") return "epilog " .. reply`))
	r := runP(t, p, "", g.cfg())
	r.ok(t, "epilog second reply")
	if got := trace(t, r); got != "pro:nil;mid:first reply;epi:second reply;" {
		t.Fatalf("trace = %q", got)
	}
	reqs := g.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := strings.Join(msgContents(reqs[1]), "|"); got != "user:First prose.|user:Second prose sees first reply." {
		t.Fatalf("second request messages = %s", got)
	}
}

func TestControl_SingleShotVersusLoop(t *testing.T) {
	g := newGW(t)
	search := searchTool()
	// Non-final prose: one round even when the model calls a tool.
	// Final prose: loops until text.
	g.Enqueue(
		gatewaytest.Calls(gatewaytest.Call{Name: "search", Args: map[string]any{"query": "a"}}),
		gatewaytest.Calls(gatewaytest.Call{Name: "search", Args: map[string]any{"query": "b"}}),
		gatewaytest.Text("final"),
	)
	p := parse(t, "# T\n\n"+lua(`tools.need("search", "Search the web and return a list of results (title, url, description).")`+"\n"+
		`models.default("writer", "A general assistant model")`)+
		"\n## A\n\n"+lua(`tools.add("search")`)+"\nFirst.\n\n"+lua(`store.write("mid", tostring(reply) .. "|" .. sys.reply_finish_reason)`)+"\nSecond.\n")
	cfg := g.cfg()
	cfg.Tools = append(cfg.Tools, search)
	r := runP(t, p, "", cfg)
	r.ok(t, "final")
	if mid, _ := r.st.Read("mid", storeAll); mid != "nil|tool_calls" {
		t.Fatalf("after single-shot: %q", mid)
	}
	if len(g.Requests()) != 3 || len(search.calls) != 2 {
		t.Fatalf("requests %d, tool calls %d", len(g.Requests()), len(search.calls))
	}
}

func TestControl_PrologueReturnAndEmptyProse(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`return args`)+"\nNever sent.\n\n"+lua(`store.write("epi", "ran")`))
	r := runP(t, p, "the args", Options{})
	r.ok(t, "the args")
	if ok, _ := r.st.Exists("epi"); ok {
		t.Fatal("epilog ran after a prologue return")
	}
	// Empty prose (two adjacent fences) needs no model; the epilog sees nil.
	p = parse(t, "# T\n\n## A\n\n"+lua(`local x = 1`)+lua(`return "epilog saw " .. tostring(reply)`))
	runP(t, p, "", Options{}).ok(t, "epilog saw nil")
	// Whitespace-only prose after substitution skips without a binding.
	p = parse(t, "# T\n\n## A\n\n"+lua(`blank = "   "`)+"\n{{ blank }}\n\n"+lua(`return "skipped"`))
	runP(t, p, "", Options{}).ok(t, "skipped")
}

func TestControl_Execute(t *testing.T) {
	p := parse(t, "# T\n\n## Main\n\n"+lua(`var.v = "outer"; local got = execute("## Sub", "input"); return got .. "|" .. var.v .. "|" .. args`)+
		"\n## Sub\n\n---\n\n"+lua(`var.v = "changed"; reply = "sub saw " .. args .. " " .. tostring(reply)`))
	runP(t, p, "run args", Options{}).ok(t, "sub saw input nil|outer|run args")
	// execute returns the chain's return value.
	p = parse(t, "# T\n\n## Main\n\n"+lua(`return "got " .. execute("## Sub")`)+"\n## Sub\n\n---\n\n"+lua(`return 7`))
	runP(t, p, "", Options{}).ok(t, "got 7")
	// Nothing produced: "".
	p = parse(t, "# T\n\n## Main\n\n"+lua(`return "[" .. execute("## Sub") .. "]"`)+"\n## Sub\n\n---\n\n"+lua(`local x = 1`))
	runP(t, p, "", Options{}).ok(t, "[]")
	// Non-string target.
	p = parse(t, "# T\n\n## Main\n\n"+lua(`execute(5)`))
	runP(t, p, "", Options{}).fails(t, KindLua, "section target must be a string, got number")
}

func TestControl_Jump(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+mark("A")+lua(`jump("## C")`)+lua(`store.append("trace", "A-after;")`)+
		"\n## B\n\n"+mark("B")+"\n## C\n\n"+lua(`store.append("trace", "C:" .. tostring(reply) .. ";")`)+
		"\n## D\n\n"+mark("D"))
	r := runP(t, p, "", Options{})
	r.ok(t, "done")
	if got := trace(t, r); got != "A;C:nil;D;" {
		t.Fatalf("trace = %q", got)
	}
	// The reply at jump time is carried; reply = nil clears it.
	p = parse(t, "# T\n\n## A\n\n"+lua(`reply = "carried"; jump("## C")`)+"\n## B\n\n"+mark("B")+
		"\n## C\n\n"+lua(`return reply`))
	runP(t, p, "", Options{}).ok(t, "carried")
	p = parse(t, "# T\n\n## A\n\n"+lua(`reply = "x"`)+"\n## B\n\n"+lua(`reply = nil; jump("## C")`)+"\n## C\n\n"+lua(`return tostring(reply)`))
	runP(t, p, "", Options{}).ok(t, "nil")
	// A backward jump re-enters a section with a fresh id.
	p = parse(t, "# T\n\n## A\n\n"+lua(`store.append("trace", "A" .. sys.id .. ";")`)+
		"\n## B\n\n"+lua(`store.append("trace", "B" .. sys.id .. ";") if sys.id < 4 then jump("## A") end return "end"`))
	r = runP(t, p, "", Options{})
	r.ok(t, "end")
	if got := trace(t, r); got != "A1;B2;A3;B4;" {
		t.Fatalf("trace = %q", got)
	}
}

func TestControl_JumpReplyThroughProse(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("model said"))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\nSpeak.\n\n"+lua(`jump("## C")`)+"\n## B\n\n"+lua(`return "B"`)+
		"\n## C\n\nEcho {{ reply }}?\n\n"+lua(`return "C saw " .. reply`))
	g.Enqueue(gatewaytest.Text("second"))
	runP(t, p, "", g.cfg()).ok(t, "C saw second")
	if got := msgContents(g.Requests()[1]); got[0] != "user:Echo model said?" {
		t.Fatalf("C's request = %v", got)
	}
}

func TestControl_ChainsAndChildWalks(t *testing.T) {
	t.Run("jump inside execute moves within the chain", func(t *testing.T) {
		p := parse(t, "# T\n\n## Main\n\n"+lua(`store.write("got", execute("## X")); store.append("trace", "main;")`)+
			"\n## X\n\n---\n\n"+mark("X")+lua(`jump("## Z")`)+
			"\n## Y\n\n"+mark("Y")+lua(`return store.read("got")`)+
			"\n## Z\n\n---\n\n"+lua(`store.append("trace", "Z;"); reply = "z reply"`))
		r := runP(t, p, "", Options{})
		r.ok(t, "z reply")
		// The outer walk did not move: after Main it falls through to Y
		// (X and Z are off-walk).
		if got := trace(t, r); got != "X;Z;main;Y;" {
			t.Fatalf("trace = %q", got)
		}
	})
	t.Run("execute over off-walk sibling falls through skipping off-walk", func(t *testing.T) {
		p := parse(t, "# T\n\n## Main\n\n"+lua(`return execute("## X")`)+
			"\n## X\n\n---\n\n"+mark("X")+
			"\n## Off\n\n---\n\n"+mark("Off")+
			"\n## Y\n\n"+lua(`store.append("trace", "Y;"); reply = "from Y"`))
		r := runP(t, p, "", Options{})
		r.ok(t, "from Y")
		if got := trace(t, r); got != "X;Y;" {
			t.Fatalf("trace = %q", got)
		}
	})
	t.Run("return inside a chain ends only the chain", func(t *testing.T) {
		p := parse(t, "# T\n\n## Main\n\n"+lua(`store.write("got", execute("## X"))`)+
			"\n## X\n\n---\n\n"+lua(`return "chain value"`)+
			"\n## Y\n\n"+lua(`return "walk continued " .. store.read("got")`))
		runP(t, p, "", Options{}).ok(t, "walk continued chain value")
	})
	t.Run("execute chain jumping to a child returns the chain's final reply", func(t *testing.T) {
		p := parse(t, "# T\n\n## Main\n\n"+lua(`return execute("## X")`)+
			"\n## X\n\n---\n\n"+lua(`reply = "x"; jump("### Kid")`)+
			"\n### Kid\n\n"+lua(`reply = "kid after " .. reply`)+
			"\n### Kid2\n\n"+lua(`reply = reply .. " and kid2"`))
		runP(t, p, "", Options{}).ok(t, "kid after x and kid2")
	})
	t.Run("ids are run-global across chains and re-entries", func(t *testing.T) {
		p := parse(t, "# T\n\n## Main\n\n"+lua(`execute("## X"); execute("## X")`)+
			"\n## X\n\n---\n\n"+lua(`store.append("trace", sys.id .. ";") return ""`)+
			"\n## After\n\n"+lua(`return store.read("trace") .. sys.id`))
		runP(t, p, "", Options{}).ok(t, "2;3;4")
	})
	t.Run("recursion is capped", func(t *testing.T) {
		p := parse(t, "# T\n\n## A\n\n"+lua(`return execute("## B")`)+"\n## B\n\n---\n\n"+lua(`return execute("## A")`))
		runP(t, p, "", Options{}).fails(t, KindLua, "execute recursion exceeded cap of 8")
	})
	t.Run("jump to a child starts a child walk", func(t *testing.T) {
		p := parse(t, "# T\n\n## A\n\n"+lua(`reply = "a"; jump("### A2")`)+
			"\n### A1\n\n"+mark("A1")+
			"\n### A2\n\n"+lua(`store.append("trace", "A2:" .. reply .. ";"); reply = reply .. "2"`)+
			"\n### A3\n\n---\n\n"+mark("A3-offwalk")+
			"\n### A4\n\n"+lua(`store.append("trace", "A4:" .. reply .. ";"); reply = reply .. "4"; jump("#### Deep")`)+
			"\n#### Deep\n\n"+lua(`store.append("trace", "Deep:" .. reply .. ";"); reply = reply .. "d"`)+
			"\n## B\n\n"+lua(`store.append("trace", "B:" .. reply .. ";")`)+
			"\n### B1\n\n"+mark("B1-never"))
		r := runP(t, p, "", Options{})
		r.ok(t, "a24d")
		if got := trace(t, r); got != "A2:a;A4:a2;Deep:a24;B:a24d;" {
			t.Fatalf("trace = %q", got)
		}
	})
	t.Run("jump to an off-walk child runs it", func(t *testing.T) {
		p := parse(t, "# T\n\n## A\n\n"+lua(`jump("### Hidden")`)+"\n### Hidden\n\n---\n\n"+lua(`return "hidden ran"`))
		runP(t, p, "", Options{}).ok(t, "hidden ran")
	})
	t.Run("execute to a later child runs the child slice from there", func(t *testing.T) {
		p := parse(t, "# T\n\n## A\n\n"+lua(`return execute("### C2")`)+
			"\n### C1\n\n"+mark("C1")+"\n### C2\n\n"+lua(`reply = "c2"`)+"\n### C3\n\n"+lua(`reply = reply .. "c3"`))
		runP(t, p, "", Options{}).ok(t, "c2c3")
	})
}

func TestControl_VisibleSets(t *testing.T) {
	body := "# T\n\n## A\n\n%s\n### A1\n\n%s\n### A2\n\n" + lua(`reply = "A2"`) + "\n#### A2x\n\n" + lua(`reply = "A2x"`) +
		"\n## B\n\n" + lua(`reply = "B ran"`) + "\n### B1\n\n" + lua(`reply = "B1"`)
	cases := []struct {
		name, aLua, a1Lua, want string
		kind                    Kind
	}{
		{"self", lua(`execute("## A")`), "", "section heading `## A` not found; available sections: ## B, ### A1, ### A2", KindLua},
		{"niece", lua(`execute("### B1")`), "", "section heading `### B1` not found", KindLua},
		{"grandchild", lua(`execute("#### A2x")`), "", "section heading `#### A2x` not found", KindLua},
		{"child cannot reach top level", lua(`jump("### A1")`), lua(`execute("## B")`), "section heading `## B` not found; available sections: ### A2", KindLua},
		{"bare name", lua(`execute("B")`), "", "section heading must include ### markers, got bare name: B", KindLua},
		{"no name", lua(`execute("###")`), "", "section heading has no name: ###", KindLua},
		{"no space", lua(`execute("##B")`), "", "section heading must have whitespace after the ### markers: ##B", KindLua},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, strings.Replace(strings.Replace(body, "%s", c.aLua, 1), "%s", c.a1Lua, 1))
			runP(t, p, "", Options{}).fails(t, c.kind, c.want)
		})
	}
	t.Run("child reaches siblings and children", func(t *testing.T) {
		p := parse(t, "# T\n\n## A\n\n"+lua(`jump("### A1")`)+"\n### A1\n\n"+lua(`return execute("### A2") .. "," .. execute("#### A1x")`)+
			"\n#### A1x\n\n"+lua(`reply = "A1x"`)+"\n### A2\n\n"+lua(`reply = "A2"`))
		runP(t, p, "", Options{}).ok(t, "A2,A1x")
	})
}

func TestControl_OffWalk(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+mark("A")+"\n## Off\n\n---\n\n"+mark("Off")+"\n## B\n\n"+mark("B"))
	r := runP(t, p, "", Options{})
	r.ok(t, "done")
	if got := trace(t, r); got != "A;B;" {
		t.Fatalf("trace = %q", got)
	}
	// Addressed by jump: runs; the walk then falls through and skips the
	// next off-walk section again.
	p = parse(t, "# T\n\n## A\n\n"+lua(`jump("## Off1")`)+"\n## Off1\n\n---\n\n"+mark("Off1")+
		"\n## Off2\n\n---\n\n"+mark("Off2")+"\n## B\n\n"+mark("B"))
	r = runP(t, p, "", Options{})
	if got := trace(t, r); got != "Off1;B;" {
		t.Fatalf("trace = %q", got)
	}
}

func TestControl_ListFromSection(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`
local b = list_from_section("## Bullets")
local n = list_from_section("### Numbered")
return table.concat(b, ",") .. "|" .. table.concat(n, ",")`)+
		"\n### Numbered\n\n1. one\n2) two\n\n## Bullets\n\n---\n\n- alpha\n* beta\n\n## Prose\n\n---\n\nJust text.\n")
	runP(t, p, "", Options{}).ok(t, "alpha,beta|one,two")
	p = parse(t, "# T\n\n## A\n\n"+lua(`list_from_section("## Prose")`)+"\n## Prose\n\n---\n\nJust text.\n")
	runP(t, p, "", Options{}).fails(t, KindLua, "section `Prose` has no pre-parsed items")
	p = parse(t, "# T\n\n## A\n\n"+lua(`list_from_section("## Missing")`)+"\n## L\n\n---\n\n- x\n")
	runP(t, p, "", Options{}).fails(t, KindLua, "section heading `## Missing` not found; available sections: ## L")
}

func TestControl_H1ControlGlobalsFail(t *testing.T) {
	for _, name := range []string{"execute", "jump", "fanout", "list_from_section"} {
		p := parse(t, "# T\n\n"+lua(name+`("## A", {})`)+"\n## A\n\n"+lua(`return 1`))
		runP(t, p, "", Options{}).fails(t, KindLua, name+" is only available in sections (## headings); H1 runs before sections exist")
	}
}
