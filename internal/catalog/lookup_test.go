package catalog

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// catalogOf builds a catalog in memory: healthy entries by name, broken
// ones by placeholder.
func catalogOf(healthy []string, broken ...string) *Catalog {
	var es []*entry
	for _, n := range healthy {
		es = append(es, &entry{name: n, description: "About " + n + ".", path: n + ".md"})
	}
	for _, n := range broken {
		es = append(es, &entry{name: n, path: n + ".md", kind: KindUnparsable, problem: "does not parse: x"})
	}
	return newCatalog(es, nil)
}

func TestFaultDisplay(t *testing.T) {
	tests := []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: KindInvalidName, Prompt: "upper", Path: "/srv/x/prompts/upper.md", Detail: "bad"}, "upper (/srv/x/prompts/upper.md): bad"},
		{Fault{Kind: KindDuplicate, Prompt: "same", Detail: "declared by 2 prompts: a, b"}, "same: declared by 2 prompts: a, b"},
		{Fault{Kind: KindUnreadable, Path: "p.md", Detail: "gone"}, "p.md: gone"},
		{Fault{Kind: KindEmpty, Detail: "no prompts resolved"}, "no prompts resolved"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorDisplayAndClass(t *testing.T) {
	one := &Error{Faults: []Fault{{Kind: KindInvalidName, Prompt: "upper", Path: "/p/upper.md",
		Detail: `tool name "Shouty" is not ^[a-z][a-z0-9_]{0,47}$`}}}
	if got, want := one.Error(), "catalog has 1 fault\n  upper (/p/upper.md): tool name \"Shouty\" is not ^[a-z][a-z0-9_]{0,47}$"; got != want {
		t.Errorf("one fault:\n%s\nwant\n%s", got, want)
	}
	if one.Class() != ClassBroken {
		t.Errorf("class = %v, want Broken", one.Class())
	}
	two := &Error{Faults: []Fault{
		{Kind: KindPattern, Detail: `include "a[b": bad`},
		{Kind: KindEmpty, Detail: "no prompts resolved; check [catalog].include and [prompts.*]"},
	}}
	if got, want := two.Error(), "catalog has 2 faults\n  include \"a[b\": bad\n  no prompts resolved; check [catalog].include and [prompts.*]"; got != want {
		t.Errorf("two faults:\n%s\nwant\n%s", got, want)
	}
	if two.Class() != ClassConfiguration {
		t.Errorf("class = %v, want Configuration", two.Class())
	}
	withPath := &Error{Faults: []Fault{{Kind: KindPattern, Detail: "x"}, {Kind: KindUnreadable, Path: "p.md", Detail: "y"}}}
	if withPath.Class() != ClassBroken {
		t.Errorf("a fault with only a path: class = %v, want Broken", withPath.Class())
	}
}

func TestKindNames(t *testing.T) {
	want := []string{"Pattern", "Unreadable", "Unparsable", "InvalidName", "Duplicate", "StaleOverride", "Empty"}
	for i, w := range want {
		if got := Kind(i + 1).String(); got != w {
			t.Errorf("Kind(%d) = %q, want %q", i+1, got, w)
		}
	}
}

func TestNormalize(t *testing.T) {
	tests := map[string]string{
		"Research-Person": "research_person",
		"GREET":           "greet",
		"already_clean":   "already_clean",
		"Émile-X":         "Émile_x", // only ASCII letters fold
	}
	for in, want := range tests {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLevenshtein(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"echo", "echo", 0}, {"echo", "ech", 1}, {"echo", "echos", 1},
		{"echo", "ecmo", 1}, {"echo", "", 4}, {"kitten", "sitting", 3}, {"héllo", "hello", 1},
	}
	for _, tt := range tests {
		if got := levenshtein([]rune(tt.a), []rune(tt.b)); got != tt.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestLookupLenient(t *testing.T) {
	c := catalogOf([]string{"echo", "explode", "greet", "research_person", "summarize"})
	for asked, want := range map[string]string{
		"GREET": "greet", "Greet": "greet", "greet": "greet", "Research-Person": "research_person",
	} {
		e, err := c.Lookup(asked)
		if err != nil || e.Name() != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", asked, e, err, want)
		}
	}
}

func TestLookupNotFoundListsClosestFirst(t *testing.T) {
	c := catalogOf([]string{"echo", "explode", "greet", "summarize"})
	_, err := c.Lookup("greeet")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	msg := err.Error()
	prefix := `there is no prompt named "greeet", so nothing was run. Enabled prompts, closest first: `
	if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, ".") {
		t.Fatalf("message = %q", msg)
	}
	listed := strings.Split(strings.TrimSuffix(strings.TrimPrefix(msg, prefix), "."), ", ")
	if listed[0] != "greet" {
		t.Errorf("closest = %q, want greet", listed[0])
	}
	slices.Sort(listed)
	if want := []string{"echo", "explode", "greet", "summarize"}; !slices.Equal(listed, want) {
		t.Errorf("listed = %v, want %v", listed, want)
	}
}

func TestClosestFirstTiesByName(t *testing.T) {
	c := catalogOf([]string{"ccc", "bbb"})
	if got, want := c.ClosestFirst("aaa"), "Enabled prompts, closest first: bbb, ccc."; got != want {
		t.Errorf("ClosestFirst = %q, want %q", got, want)
	}
	if got := catalogOf(nil).ClosestFirst("x"); got != "No prompts are enabled." {
		t.Errorf("empty catalog = %q", got)
	}
	withBroken := catalogOf([]string{"alpha"}, "alphb")
	if got, want := withBroken.ClosestFirst("alphb"), "Enabled prompts, closest first: alphb, alpha."; got != want {
		t.Errorf("broken entries are listed too: %q, want %q", got, want)
	}
}

func TestLookupNeverShadowedByBroken(t *testing.T) {
	// Built by hand, so the broken placeholder collides as the reference
	// allowed: the healthy entry must still win.
	c := catalogOf([]string{"research_person"}, "Research-Person")
	e, err := c.Lookup("research_person")
	if err != nil || e.Broken() {
		t.Fatalf("Lookup = %v, %v; want the healthy entry", e, err)
	}
	// With no healthy match a broken one answers, so the caller sees why.
	c = catalogOf([]string{"good"}, "bad", "Bad")
	if e, err := c.Lookup("bad"); err != nil || !e.Broken() {
		t.Errorf("Lookup(bad) = %v, %v; want a broken entry", e, err)
	}
}

func TestLookupAmbiguous(t *testing.T) {
	c := newCatalog([]*entry{{name: "twin", path: "a.md"}, {name: "twin", path: "b.md"}}, nil)
	_, err := c.Lookup("Twin")
	if !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("err = %v, want ErrAmbiguous", err)
	}
	if got, want := err.Error(), `the prompt name "Twin" matched more than one enabled prompt`; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

func TestPaging(t *testing.T) {
	c := catalogOf([]string{"a", "b", "c"})
	page := c.Page(1, 5)
	if len(page) != 2 || page[0].Name() != "b" || page[1].Name() != "c" {
		t.Errorf("Page(1,5) = %v", page)
	}
	if c.Page(3, 5) != nil || c.Page(-1, 5) != nil {
		t.Errorf("out-of-range pages are not empty")
	}
	page[0] = c.At(0)
	if c.At(1).Name() != "b" {
		t.Errorf("writing to a page changed the catalog")
	}
}

// A huge unknown name costs no more than a long one, and the reply quotes
// it bounded (B5); a normal name is quoted whole.
func TestLookupBoundsAHugeName(t *testing.T) {
	huge := strings.Repeat("é", 1<<20)
	if got := firstRunes(huge, compareRunes); utf8.RuneCountInString(got) != compareRunes {
		t.Fatalf("compared %d runes", utf8.RuneCountInString(got))
	}
	q := quotedName(huge)
	if len(q) > echoBytes+len("…") || !strings.HasSuffix(q, "…") || !utf8.ValidString(q) {
		t.Fatalf("quoted %d bytes: %q…", len(q), q[:20])
	}
	if quotedName("summarise") != "summarise" {
		t.Fatal("a normal name was altered")
	}
	err := (&LookupError{Requested: huge, Err: ErrNotFound}).Error()
	if len(err) > 400 {
		t.Fatalf("the not-found text is %d bytes", len(err))
	}
}
