package pattern

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/pm"
)

var patterns = []string{
	"", "a", "abc", ".", "..", "a*", "a+", "a-", "a?", "^a", "a$", "^$", "^a*$", "b$", "a$b",
	"%a+", "%d+", "%s*", "%S+", "%w+", "%p", "%l%u", "%x+", "%c", "%z", "%A", "%D+", "%%", "%.",
	"[abc]+", "[^abc]+", "[a-z]+", "[%a-]+", "[]]", "[^]]+", "[a-]", "[-a]", "[%d%.]+", "[a-c-e]",
	"(a)", "(a*)", "(a)(b)", "((a)(b))", "()", "()a()", "(.-)b", "(.*)b", "^(%s*)(.-)(%s*)$",
	"(%w+)=(%w+)", "%b()", "%b<>", "x%b()y", "(a)%1", "(%w+) %1", "()%1", "(h)(e)%2",
	".-b", ".*b", ".-.-b", "a.-z", "[%w_]+", "^%s*(.-)%s*$", "%f", "%",
	"(", ")", "[a", "%1", "(()", "(a%1)", "%ba", "a(b", "(.)%1",
}

var subjects = []string{
	"", "a", "b", "aaa", "aab", "abcabc", "hello world", "  trim me  ", "key=value; k2=v2",
	"<a><b></b></a>", "(foo(bar))baz", "x(y)z", "THE (quick) fox", "x\x00y", "1234.5e6",
	"über 42", "a]b]]c", "a-b-c", "hello hello", "xx", "bab", "zz-top",
}

// reference runs gopher-lua's pm, reporting a Go panic as an error string.
func reference(p, src string, init, limit int) (mds []*pm.MatchData, err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
		}
	}()
	mds, err = pm.Find(p, []byte(src), init, limit)
	return mds, err, false
}

func sameMatch(got *Match, want *pm.MatchData) error {
	if got.Captures() != want.CaptureLength()/2-1 {
		return fmt.Errorf("captures %d, want %d", got.Captures(), want.CaptureLength()/2-1)
	}
	for i := 0; i < want.CaptureLength(); i++ {
		if got.slot(i) != want.Capture(i) || (got.caps[i]&1 == 1) != want.IsPosCapture(i) {
			return fmt.Errorf("slot %d = %d (pos %v), want %d (pos %v)", i, got.slot(i), got.caps[i]&1 == 1, want.Capture(i), want.IsPosCapture(i))
		}
	}
	return nil
}

// all iterates the way gsub and gmatch do.
func all(p *Pattern, src string) ([]*Match, error) {
	var out []*Match
	for pos := 0; pos <= len(src); {
		m, err := p.Find(context.Background(), src, pos)
		if err != nil || m == nil {
			return out, err
		}
		out = append(out, m)
		pos = max(m.Start()+1, m.End())
		if p.Anchored() {
			break
		}
	}
	return out, nil
}

// compare checks Compile+Find against pm.Find for the first match from
// init and for every match from 0.
func compare(t *testing.T, p, src string, init int) {
	t.Helper()
	want, werr, panicked := reference(p, src, init, 1)
	if panicked {
		return // pm crashed; there is nothing to agree with
	}
	pat, err := Compile(p)
	var got *Match
	if err == nil {
		got, err = pat.Find(context.Background(), src, init)
	}
	if (err != nil) != (werr != nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("Find(%q, %q, %d): error %v, pm error %v", p, src, init, err, werr)
	}
	if err != nil {
		return
	}
	if (got == nil) != (len(want) == 0) {
		t.Fatalf("Find(%q, %q, %d) = %v, pm found %d matches", p, src, init, got, len(want))
	}
	if got != nil {
		if e := sameMatch(got, want[0]); e != nil {
			t.Fatalf("Find(%q, %q, %d): %v", p, src, init, e)
		}
	}
	if init != 0 {
		return
	}
	wantAll, werr, panicked := reference(p, src, 0, -1)
	if panicked || werr != nil {
		return
	}
	gotAll, err := all(pat, src)
	if err != nil {
		t.Fatalf("all(%q, %q): %v", p, src, err)
	}
	if len(gotAll) != len(wantAll) {
		t.Fatalf("all(%q, %q): %d matches, pm %d", p, src, len(gotAll), len(wantAll))
	}
	for i := range gotAll {
		if e := sameMatch(gotAll[i], wantAll[i]); e != nil {
			t.Fatalf("all(%q, %q) match %d: %v", p, src, i, e)
		}
	}
}

// TestMatchesGopherLua pins the vendored matcher to the original: every
// pattern against every subject, from several start positions.
func TestMatchesGopherLua(t *testing.T) {
	for _, p := range patterns {
		for _, s := range subjects {
			for _, init := range []int{0, 1, 2, len(s), len(s) + 1} {
				compare(t, p, s, init)
			}
		}
	}
}

func FuzzMatchesGopherLua(f *testing.F) {
	for _, p := range patterns {
		f.Add(p, "hello (world) 42 <x>", 0)
	}
	f.Fuzz(func(t *testing.T, p, src string, init int) {
		if len(p) > 24 || len(src) > 96 || init < 0 || init > len(src)+1 {
			t.Skip()
		}
		compare(t, p, src, init)
	})
}

// stopAfter is a context whose Err turns non-nil after n calls, so a test
// can prove that a match polls its context without measuring time.
type stopAfter struct {
	context.Context
	n     int
	calls int
}

var errStopped = errors.New("stopped by the test")

func (c *stopAfter) Err() error {
	c.calls++
	if c.calls > c.n {
		return errStopped
	}
	return nil
}

func TestBacktrackingPatternObeysItsContext(t *testing.T) {
	// Cubic backtracking: pm ran this for minutes with no way to stop it.
	pat, err := Compile(".-.-.-b")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Repeat("a", 3000)
	ctx := &stopAfter{Context: context.Background(), n: 3}
	m, err := pat.Find(ctx, src, 0)
	if !errors.Is(err, errStopped) || m != nil {
		t.Fatalf("Find = %v, %v; want the context's error", m, err)
	}
	if ctx.calls != 4 {
		t.Fatalf("context checked %d times, want 4 (once up front, then every %d steps)", ctx.calls, checkEvery)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pat.Find(cancelled, src, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("pre-cancelled Find: %v", err)
	}
	// %b scans count too.
	brace, err := Compile("%b()")
	if err != nil {
		t.Fatal(err)
	}
	ctx = &stopAfter{Context: context.Background(), n: 1}
	if _, err := brace.Find(ctx, "("+strings.Repeat("(", 3*checkEvery), 0); !errors.Is(err, errStopped) {
		t.Fatalf("balanced scan: %v", err)
	}
}

func TestDepthLimit(t *testing.T) {
	pat, err := Compile("(.*)")
	if err != nil {
		t.Fatal(err)
	}
	_, err = pat.Find(context.Background(), strings.Repeat("a", maxDepth), 0)
	var perr *Error
	if !errors.As(err, &perr) || perr.Error() != "pattern/input too complex" {
		t.Fatalf("deep match: %v", err)
	}
	m, err := pat.Find(context.Background(), strings.Repeat("a", 1000), 0)
	if err != nil || m.End() != 1000 {
		t.Fatalf("shallow match: %v %v", m, err)
	}
}

func TestCaptureAccessors(t *testing.T) {
	pat, err := Compile("(%w+)=()(%w+)")
	if err != nil {
		t.Fatal(err)
	}
	m, err := pat.Find(context.Background(), "  key=val", 0)
	if err != nil || m == nil {
		t.Fatal(m, err)
	}
	if m.Start() != 2 || m.End() != 9 || m.Captures() != 3 {
		t.Fatalf("whole %d..%d, %d captures", m.Start(), m.End(), m.Captures())
	}
	if s, e, pos := m.Capture(1); s != 2 || e != 5 || pos {
		t.Fatalf("capture 1 = %d %d %v", s, e, pos)
	}
	if s, e, pos := m.Capture(2); s != 7 || e != 7 || !pos {
		t.Fatalf("position capture = %d %d %v", s, e, pos)
	}
}
