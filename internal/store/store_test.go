package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func mustWrite(t *testing.T, s *Store, path, content string) {
	t.Helper()
	if err := s.Write(path, content); err != nil {
		t.Fatalf("Write(%q): %v", path, err)
	}
}

// wantErr checks the exact message and kind of a store error.
func wantErr(t *testing.T, err error, kind Kind, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %q", msg)
	}
	if err.Error() != msg {
		t.Fatalf("error = %q, want %q", err.Error(), msg)
	}
	var se *Error
	if !errors.As(err, &se) || se.Kind != kind {
		t.Fatalf("error %q: kind = %v, want %v", err, se, kind)
	}
	if !errors.Is(err, &Error{Kind: kind}) {
		t.Fatalf("errors.Is(%q, kind %d) = false", err, kind)
	}
}

func TestWriteReadOverwriteAppend(t *testing.T) {
	s := New()
	mustWrite(t, s, "notes/a.md", "hello\r\nworld\n")
	got, err := s.Read("notes/a.md", Range{})
	if err != nil || got != "hello\r\nworld\n" {
		t.Fatalf("Read = %q, %v; want verbatim content", got, err)
	}
	mustWrite(t, s, "notes/a.md", "second")
	if got, _ := s.Read("notes/a.md", Range{}); got != "second" {
		t.Fatalf("after overwrite Read = %q, want %q", got, "second")
	}
	if err := s.Append("log.txt", "one\n"); err != nil {
		t.Fatal(err)
	}
	if err := s.Append("log.txt", "two\n"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Read("log.txt", Range{}); got != "one\ntwo\n" {
		t.Fatalf("append Read = %q, want %q", got, "one\ntwo\n")
	}
}

func TestMissingDeleteExists(t *testing.T) {
	s := New()
	_, err := s.Read("missing.md", Range{})
	wantErr(t, err, KindNotFound, "file not found: missing.md")
	if err := s.Delete("missing.md"); err != nil {
		t.Fatalf("Delete(missing) = %v, want nil", err)
	}
	mustWrite(t, s, "a.md", "x")
	if ok, err := s.Exists("a.md"); !ok || err != nil {
		t.Fatalf("Exists(a.md) = %v, %v; want true", ok, err)
	}
	if err := s.Delete("a.md"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Read("a.md", Range{})
	wantErr(t, err, KindNotFound, "file not found: a.md")
	if ok, err := s.Exists("a.md"); ok || err != nil {
		t.Fatalf("Exists(deleted) = %v, %v; want false", ok, err)
	}
	_, err = s.Exists("../a.md")
	wantErr(t, err, KindInvalidPath, `invalid path "../a.md": the path has a . or .. segment`)
}

func TestStrReplace(t *testing.T) {
	s := New()
	mustWrite(t, s, "doc.md", "alpha beta gamma beta")
	if err := s.StrReplace("doc.md", "gamma", "delta"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Read("doc.md", Range{}); got != "alpha beta delta beta" {
		t.Fatalf("after edit = %q", got)
	}
	tests := []struct {
		name, path, old string
		kind            Kind
		msg             string
	}{
		{"missing anchor", "doc.md", "omega", KindAnchorNotFound, "anchor not found in doc.md"},
		{"ambiguous anchor", "doc.md", "beta", KindAnchorAmbiguous, "anchor occurs 2 times in doc.md, expected exactly one"},
		{"overlapping anchor", "doc.md", "a", KindAnchorAmbiguous, "anchor occurs 5 times in doc.md, expected exactly one"},
		{"missing file", "nope.md", "x", KindNotFound, "file not found: nope.md"},
		{"empty anchor", "doc.md", "", KindInvalidAnchor, "invalid anchor for doc.md: the text to replace must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, s.StrReplace(tt.path, tt.old, "z"), tt.kind, tt.msg)
			if got, _ := s.Read("doc.md", Range{}); got != "alpha beta delta beta" {
				t.Fatalf("a failed edit changed the file to %q", got)
			}
		})
	}
	mustWrite(t, s, "o.md", "aaa")
	wantErr(t, s.StrReplace("o.md", "aa", "b"), KindAnchorAmbiguous, "anchor occurs 2 times in o.md, expected exactly one")
}

func from(start int) Range      { return Range{Start: start, HasStart: true} }
func span(start, end int) Range { return Range{Start: start, End: end, HasStart: true, HasEnd: true} }
func onlyEnd(end int) Range     { return Range{End: end, HasEnd: true} }
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line%d\n", i)
	}
	return b.String()
}

func TestBoundedReads(t *testing.T) {
	s := New()
	mustWrite(t, s, "f.txt", "one\ntwo\r\nthree\nfour\n")
	mustWrite(t, s, "empty.txt", "")
	mustWrite(t, s, "blank.txt", "\n")
	tests := []struct {
		name, path string
		r          Range
		want       string
	}{
		{"whole file verbatim", "f.txt", Range{}, "one\ntwo\r\nthree\nfour\n"},
		{"start only to EOF", "f.txt", from(2), "two\nthree\nfour"},
		{"inclusive slice", "f.txt", span(2, 3), "two\nthree"},
		{"single line", "f.txt", span(3, 3), "three"},
		{"end clamps", "f.txt", span(3, 99), "three\nfour"},
		{"start at last line", "f.txt", from(4), "four"},
		{"beyond EOF", "f.txt", from(5), ""},
		{"beyond EOF with end", "f.txt", span(7, 9), ""},
		{"empty file", "empty.txt", from(1), ""},
		{"empty file whole", "empty.txt", Range{}, ""},
		{"one empty line", "blank.txt", from(1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Read(tt.path, tt.r)
			if err != nil || got != tt.want {
				t.Fatalf("Read(%q, %v) = %q, %v; want %q", tt.path, tt.r, got, err, tt.want)
			}
		})
	}
}

func TestReadNumbered(t *testing.T) {
	s := New()
	mustWrite(t, s, "ab.txt", "alpha\nbeta")
	mustWrite(t, s, "crlf.txt", "x\r\ny\r\n")
	mustWrite(t, s, "big.txt", lines(120))
	mustWrite(t, s, "empty.txt", "")
	tests := []struct {
		name, path string
		r          Range
		want       string
	}{
		{"whole file from 1", "ab.txt", Range{}, "1| alpha\n2| beta"},
		{"absolute numbers", "ab.txt", from(2), "2| beta"},
		{"crlf lines", "crlf.txt", Range{}, "1| x\n2| y"},
		{"padding across 99/100", "big.txt", span(99, 101), " 99| line99\n100| line100\n101| line101"},
		{"width of largest emitted", "big.txt", span(9, 10), " 9| line9\n10| line10"},
		{"no padding below 10", "big.txt", span(8, 9), "8| line8\n9| line9"},
		{"end clamps", "big.txt", span(119, 500), "119| line119\n120| line120"},
		{"beyond EOF", "big.txt", from(121), ""},
		{"empty file", "empty.txt", Range{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ReadNumbered(tt.path, tt.r)
			if err != nil || got != tt.want {
				t.Fatalf("ReadNumbered(%q, %v) = %q, %v; want %q", tt.path, tt.r, got, err, tt.want)
			}
		})
	}
}

func TestRangeErrors(t *testing.T) {
	s := New()
	mustWrite(t, s, "f.txt", "a\nb\n")
	tests := []struct {
		name string
		r    Range
		msg  string
	}{
		{"start zero", from(0), "invalid line range 0.. for f.txt: start must be at least 1"},
		{"start negative", span(-2, 3), "invalid line range -2..3 for f.txt: start must be at least 1"},
		{"end before start", span(2, 1), "invalid line range 2..1 for f.txt: end must not be before start"},
		{"end without start", onlyEnd(2), "invalid line range ..2 for f.txt: start is required when end is given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Read("f.txt", tt.r)
			wantErr(t, err, KindInvalidRange, tt.msg)
			_, err = s.ReadNumbered("f.txt", tt.r)
			wantErr(t, err, KindInvalidRange, tt.msg)
		})
	}
	// A start past the last line reads "" whatever the end (the
	// reference's rule): only a start within the file makes a backwards
	// range an error.
	for _, r := range []Range{span(3, 2), span(5, 1), span(9, 8)} {
		if got, err := s.Read("f.txt", r); err != nil || got != "" {
			t.Fatalf("Read(f.txt, %v) = %q, %v; want \"\"", r, got, err)
		}
		if got, err := s.ReadNumbered("f.txt", r); err != nil || got != "" {
			t.Fatalf("ReadNumbered(f.txt, %v) = %q, %v; want \"\"", r, got, err)
		}
	}
	mustWrite(t, s, "empty.txt", "")
	if got, err := s.Read("empty.txt", span(1, 0)); err != nil || got != "" {
		t.Fatalf("Read(empty.txt, 1..0) = %q, %v; want \"\"", got, err)
	}
	// Bound errors are argument errors: reported even for a missing file.
	_, err := s.Read("gone.txt", span(2, 1))
	wantErr(t, err, KindInvalidRange, "invalid line range 2..1 for gone.txt: end must not be before start")
	_, err = s.Read("gone.txt", from(0))
	wantErr(t, err, KindInvalidRange, "invalid line range 0.. for gone.txt: start must be at least 1")
	_, err = s.ReadNumbered("gone.txt", from(1))
	wantErr(t, err, KindNotFound, "file not found: gone.txt")
}

func TestSnapshotIsACopy(t *testing.T) {
	s := New()
	mustWrite(t, s, "a", "1")
	snap := s.Snapshot()
	snap["a"] = "changed"
	snap["b"] = "new"
	if got, _ := s.Read("a", Range{}); got != "1" {
		t.Fatalf("mutating the snapshot changed the store: %q", got)
	}
	if ok, _ := s.Exists("b"); ok {
		t.Fatal("mutating the snapshot added a file")
	}
	mustWrite(t, s, "a", "2")
	if snap := s.Snapshot(); len(snap) != 1 || snap["a"] != "2" {
		t.Fatalf("Snapshot = %v", snap)
	}
}

func TestSeedIsAllOrNothing(t *testing.T) {
	s := New()
	err := s.Seed(map[string]string{"in/ok.md": "x", "in/bad/": "y", "aux.txt": "z"})
	wantErr(t, err, KindInvalidPath, `invalid path "aux.txt": segment "aux.txt" is a reserved Windows device name`)
	if snap := s.Snapshot(); len(snap) != 0 {
		t.Fatalf("a failed Seed wrote %v", snap)
	}
	if err := s.Seed(map[string]string{"in/ok.md": "x", "in/other.md": "y"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Read("in/other.md", Range{}); got != "y" {
		t.Fatalf("seeded content = %q", got)
	}
}

func TestEveryOperationValidatesThePath(t *testing.T) {
	s := New()
	const bad = "a//b"
	const msg = `invalid path "a//b": the path has an empty segment (a doubled or trailing /)`
	ops := map[string]func() error{
		"write":        func() error { return s.Write(bad, "") },
		"write as arm": func() error { return s.WriteAs(Writer{Fanout: 1}, bad, "") },
		"append":       func() error { return s.Append(bad, "") },
		"read":         func() error { _, err := s.Read(bad, Range{}); return err },
		"read numbered": func() error {
			_, err := s.ReadNumbered(bad, Range{})
			return err
		},
		"str_replace": func() error { return s.StrReplace(bad, "", "") },
		"delete":      func() error { return s.Delete(bad) },
		"exists":      func() error { _, err := s.Exists(bad); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) { wantErr(t, op(), KindInvalidPath, msg) })
	}
}

func TestWriteRaceTracking(t *testing.T) {
	s := New()
	f1 := s.NewFanout()
	f2 := s.NewFanout()
	if f1 == 0 || f1 == f2 {
		t.Fatalf("fanout tokens %d, %d: want distinct and non-zero", f1, f2)
	}
	arm := func(f uint64, i int) Writer { return Writer{Fanout: f, Arm: i} }
	const race = "write-write race on out.md: another arm of the same fanout already wrote it"

	if err := s.WriteAs(arm(f1, 1), "out.md", "arm 1"); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteAs(arm(f1, 1), "out.md", "arm 1 again"); err != nil {
		t.Fatalf("same arm rewriting: %v", err)
	}
	wantErr(t, s.WriteAs(arm(f1, 2), "out.md", "arm 2"), KindWriteRace, race)
	if got, _ := s.Read("out.md", Range{}); got != "arm 1 again" {
		t.Fatalf("a racing write changed the file to %q", got)
	}
	if err := s.WriteAs(arm(f1, 2), "other.md", "arm 2"); err != nil {
		t.Fatalf("another arm writing another path: %v", err)
	}
	if err := s.Append("out.md", "+log"); err != nil {
		t.Fatalf("append is never tracked: %v", err)
	}
	if err := s.Write("out.md", "walked section"); err != nil {
		t.Fatalf("an untracked write: %v", err)
	}
	if err := s.WriteAs(Writer{}, "out.md", "zero writer"); err != nil {
		t.Fatalf("the zero Writer is untracked: %v", err)
	}
	if err := s.WriteAs(arm(f2, 2), "out.md", "later fanout"); err != nil {
		t.Fatalf("a later fanout rewriting: %v", err)
	}
	if err := s.WriteAs(arm(f2, 2), "out.md", "later fanout again"); err != nil {
		t.Fatal(err)
	}
	// Untracked writes leave the record alone: the arms of f2 still race.
	wantErr(t, s.WriteAs(arm(f2, 5), "out.md", "x"), KindWriteRace, race)
	// Appending arms never race, even on a path arms wrote.
	if err := s.Append("other.md", "from arm 3"); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentArms runs real concurrent arms under -race: each writes
// its own file and appends to a shared log, and exactly one of several
// arms writing a shared path wins while the rest see the race error.
func TestConcurrentArms(t *testing.T) {
	s := New()
	f := s.NewFanout()
	const arms = 16
	var wg sync.WaitGroup
	errs := make([]error, arms)
	for i := range arms {
		wg.Go(func() {
			w := Writer{Fanout: f, Arm: i}
			if err := s.WriteAs(w, fmt.Sprintf("arm/%02d.md", i), "x"); err != nil {
				errs[i] = err
				return
			}
			if err := s.Append("log.md", "."); err != nil {
				errs[i] = err
				return
			}
			errs[i] = s.WriteAs(w, "shared.md", fmt.Sprint(i))
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, &Error{Kind: KindWriteRace}):
		default:
			t.Fatalf("arm %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d arms wrote shared.md, want exactly 1", won)
	}
	if got, _ := s.Read("log.md", Range{}); got != strings.Repeat(".", arms) {
		t.Fatalf("log = %q, want %d appends", got, arms)
	}
	got, err := s.Glob("arm/*.md")
	if err != nil || len(got) != arms {
		t.Fatalf("Glob(arm/*.md) = %v, %v", got, err)
	}
}

// Size follows every kind of change, so a run's memory ceiling can read it
// without walking the files.
func TestSizeFollowsChanges(t *testing.T) {
	s := New()
	want := func(n int64) {
		t.Helper()
		if got := s.Size(); got != n {
			t.Fatalf("Size() = %d, want %d", got, n)
		}
	}
	want(0)
	must(t, s.Write("a.txt", "hello"))
	want(5 + 5)
	must(t, s.Append("a.txt", "!!"))
	want(5 + 7)
	must(t, s.Write("a.txt", "x"))
	want(5 + 1)
	must(t, s.Seed(map[string]string{"b/c.md": "1234"}))
	want(5 + 1 + 6 + 4)
	must(t, s.StrReplace("b/c.md", "23", "abcdef"))
	want(5 + 1 + 6 + 8)
	if n := s.Len("b/c.md"); n != 8 {
		t.Fatalf("Len = %d, want 8", n)
	}
	must(t, s.Delete("b/c.md"))
	must(t, s.Delete("b/c.md"))
	want(5 + 1)
	if n := s.Len("b/c.md"); n != 0 {
		t.Fatalf("Len of a deleted file = %d, want 0", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Appends build the file in place, yet every string handed out before
// stays what it was, whatever is written or appended after.
func TestAppendKeepsEarlierReads(t *testing.T) {
	s := New()
	var reads []string
	want := ""
	for i := range 200 {
		part := fmt.Sprintf("<%d>", i)
		must(t, s.Append("log.txt", part))
		want += part
		got, err := s.Read("log.txt", Range{})
		must(t, err)
		if got != want {
			t.Fatalf("after %d appends: %q, want %q", i+1, got, want)
		}
		reads = append(reads, got)
		if i == 100 {
			must(t, s.Write("log.txt", want)) // a write in between starts a fresh buffer
		}
	}
	check := ""
	for i, r := range reads {
		check += fmt.Sprintf("<%d>", i)
		if r != check {
			t.Fatalf("read %d changed to %q", i, r)
		}
	}
}

// An empty store is one allocation: a run holds its store for its whole
// wait, and most runs' stores stay empty. Its maps come with the writes
// that need them, and every operation works on it before and after.
func TestAnEmptyStoreIsOneAllocation(t *testing.T) {
	var kept *Store // escapes, as a run's store does
	if allocs := testing.AllocsPerRun(100, func() { kept = New() }); allocs != 1 || kept == nil {
		t.Fatalf("New makes %v allocations, want 1", allocs)
	}
	s := New()
	if _, err := s.Read("a.txt", Range{}); err == nil {
		t.Fatal("read a file of an empty store")
	}
	if err := s.Delete("a.txt"); err != nil {
		t.Fatal(err)
	}
	if err := s.Append("log.txt", "one"); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteAs(Writer{Fanout: s.NewFanout(), Arm: 1}, "arm.txt", "x"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read("log.txt", Range{}); err != nil || got != "one" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// The zero Store is an empty store: every method works on it, and on
// its maps as the first writes make them, from many goroutines at once
// (fanout arms share a run's store; the race detector sees a map made
// or written outside the lock).
func TestZeroStoreConcurrently(t *testing.T) {
	var s Store
	if got := s.Snapshot(); len(got) != 0 {
		t.Fatalf("snapshot of the zero store: %v", got)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			p := fmt.Sprintf("d/f%d.txt", g%3)
			tok := s.NewFanout()
			_, _ = s.Read(p, Range{})
			_, _ = s.ReadNumbered(p, Range{})
			_, _ = s.Exists(p)
			_, _ = s.Glob("d/*")
			_ = s.Len(p)
			_ = s.Size()
			_ = s.Snapshot()
			_ = s.StrReplace(p, "a", "b")
			_ = s.Delete(p)
			if err := s.Append(p, "a"); err != nil {
				t.Error(err)
			}
			_ = s.WriteAs(Writer{Fanout: tok, Arm: g + 1}, fmt.Sprintf("arm%d.txt", g), "x")
			if err := s.Write(fmt.Sprintf("w%d.txt", g), "y"); err != nil {
				t.Error(err)
			}
			_ = s.Seed(map[string]string{fmt.Sprintf("s%d.txt", g): "z"})
		})
	}
	wg.Wait()
	for g := range 8 {
		for _, p := range []string{fmt.Sprintf("arm%d.txt", g), fmt.Sprintf("w%d.txt", g), fmt.Sprintf("s%d.txt", g)} {
			if ok, err := s.Exists(p); !ok || err != nil {
				t.Fatalf("%s after the writes: %v %v", p, ok, err)
			}
		}
	}
}
