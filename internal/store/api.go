package store

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Store is a run-scoped virtual filesystem: logical path -> UTF-8 text.
// It is safe for concurrent use (fanout arms share one Store). The zero
// value is an empty store, as [New] returns.
type Store struct {
	mu    sync.RWMutex
	files map[string]string
	// lastArm remembers, per path, the fanout arm that last wrote it
	// through WriteAs. Only tracked writes touch it, so plain writes,
	// appends and deletes never hide or invent a race.
	lastArm map[string]Writer
	// tails keeps, per path, the buffer its content was last appended
	// into, with spare capacity: an append loop then copies each byte
	// once instead of the whole file on every append (see Append).
	tails map[string][]byte

	fanouts atomic.Uint64
	// size is the bytes the files hold (paths and contents), kept current
	// by every change so that a run's memory ceiling can read it cheaply
	// (see Size).
	size atomic.Int64
}

// New returns an empty in-memory store. Its maps are made by the first
// write that needs each: most runs' stores stay empty (a prose run without
// declared input), and each is held for the run's whole wait.
func New() *Store {
	return &Store{}
}

// Range selects lines of a file for Read and ReadNumbered. The zero Range
// means the whole file. Lines are 1-based and inclusive.
type Range struct {
	Start, End       int
	HasStart, HasEnd bool
}

// Writer identifies who performs a tracked write: one arm of one fanout.
// The zero Writer is untracked, so code that does not know whether it runs
// inside an arm can always pass the Writer it was handed.
type Writer struct {
	// Fanout is the token of the fanout call (see NewFanout); 0 means the
	// write is not part of a fanout arm and is not tracked.
	Fanout uint64
	// Arm is the arm's position in the fanout (any stable per-arm number).
	Arm int
}

// NewFanout hands out a token that no earlier fanout on this store used,
// so a later fanout rewriting a path an earlier one wrote is never a race.
func (s *Store) NewFanout() uint64 { return s.fanouts.Add(1) }

// Write creates or overwrites path.
func (s *Store) Write(path, content string) error {
	return s.WriteAs(Writer{}, path, content)
}

// WriteAs is Write on behalf of a fanout arm. It fails with a WriteRace
// error, writing nothing, when the path was last written by a different
// arm of the same fanout: two arms producing one file means one result is
// silently lost, which is a prompt bug worth stopping the fanout for.
func (s *Store) WriteAs(w Writer, path, content string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.Fanout != 0 {
		if prev, ok := s.lastArm[path]; ok && prev.Fanout == w.Fanout && prev.Arm != w.Arm {
			return errWriteRace(path)
		}
		if s.lastArm == nil {
			s.lastArm = make(map[string]Writer)
		}
		s.lastArm[path] = w
	}
	s.set(path, content)
	return nil
}

// Append creates path or appends to it. Appends are never race-tracked:
// several arms appending to one log is a legitimate pattern whose order
// is simply unspecified.
func (s *Store) Append(path, content string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.files[path]
	buf := s.tails[path]
	// The buffer still backs the file when the file is exactly its
	// filled part; bytes past that part belong to no string yet, so
	// appending there leaves every string handed out unchanged, as
	// strings.Builder does.
	if len(buf) != len(old) || len(old) == 0 || unsafe.StringData(old) != unsafe.SliceData(buf) {
		buf = append(make([]byte, 0, len(old)+len(content)), old...)
	}
	// append grows the buffer geometrically (by a quarter, for large
	// ones), so an append loop copies each byte a bounded number of times.
	buf = append(buf, content...)
	s.set(path, unsafe.String(unsafe.SliceData(buf), len(buf)))
	if s.tails == nil {
		s.tails = make(map[string][]byte)
	}
	s.tails[path] = buf
	return nil
}

// Seed pre-loads files before a run. Every path is validated first and
// nothing is written if any is invalid, so a host never starts a run on a
// half-seeded store. The first invalid path in byte order is reported.
func (s *Store) Seed(files map[string]string) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := ValidatePath(p); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range paths {
		s.set(p, files[p])
	}
	return nil
}

// Read returns the selected lines of path (the verbatim content for the
// zero Range).
func (s *Store) Read(path string, r Range) (string, error) {
	content, err := s.load(path, r)
	if err != nil {
		return "", err
	}
	if !r.HasStart && !r.HasEnd {
		return content, nil
	}
	return sliceLines(content, r.Start, r.End, r.HasEnd), nil
}

// ReadNumbered is Read with each line prefixed by its absolute number,
// right-aligned to the widest emitted number, then "| ".
func (s *Store) ReadNumbered(path string, r Range) (string, error) {
	content, err := s.load(path, r)
	if err != nil {
		return "", err
	}
	start := 1
	if r.HasStart {
		start = r.Start
	}
	return numberLines(content, start, r.End, r.HasEnd), nil
}

// load validates the path and the bounds (argument errors come before
// lookup errors) and returns the file's content.
//
// An end before start is the one bound judged against the file: a start
// past the last line reads "" whatever the end (prompt-language §4.2, as
// the reference does), so it is an error only for a start within the file,
// or for a file that does not exist.
func (s *Store) load(path string, r Range) (string, error) {
	if err := ValidatePath(path); err != nil {
		return "", err
	}
	switch {
	case r.HasEnd && !r.HasStart:
		return "", errInvalidRange(path, r, "start is required when end is given")
	case r.HasStart && r.Start < 1:
		return "", errInvalidRange(path, r, "start must be at least 1")
	}
	s.mu.RLock()
	content, ok := s.files[path]
	s.mu.RUnlock()
	backwards := r.HasEnd && r.End < r.Start
	switch {
	case backwards && (!ok || r.Start <= lineCount(content)):
		return "", errInvalidRange(path, r, "end must not be before start")
	case !ok:
		return "", errNotFound(path)
	}
	return content, nil
}

// StrReplace replaces the single occurrence of old in path with new.
//
// Occurrences are counted with overlaps ("aa" occurs twice in "aaa"):
// the point of the check is that the anchor pins one place, and an
// overlapping second match means it does not.
func (s *Store) StrReplace(path, old, new string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	if old == "" {
		return errInvalidAnchor(path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	content, ok := s.files[path]
	if !ok {
		return errNotFound(path)
	}
	at := strings.Index(content, old)
	if at < 0 {
		return errAnchorNotFound(path)
	}
	if n := countOverlapping(content, old, at); n > 1 {
		return errAnchorAmbiguous(path, n)
	}
	s.set(path, content[:at]+new+content[at+len(old):])
	return nil
}

// countOverlapping counts matches of old in content, the first being at
// index first.
func countOverlapping(content, old string, first int) int {
	n := 0
	for i := first; i >= 0; {
		n++
		next := strings.Index(content[i+1:], old)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return n
}

// Delete removes path; a missing path is not an error.
func (s *Store) Delete(path string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.files[path]; ok {
		s.size.Add(-int64(len(path) + len(old)))
	}
	delete(s.files, path)
	delete(s.tails, path)
	return nil
}

// set stores content at path and keeps size current; s.mu is held.
// Append keeps its buffer in tails; any other change of the file drops it.
func (s *Store) set(path, content string) {
	old, ok := s.files[path]
	if !ok {
		old = ""
		s.size.Add(int64(len(path)))
	}
	s.size.Add(int64(len(content) - len(old)))
	if s.files == nil {
		s.files = make(map[string]string)
	}
	s.files[path] = content
	delete(s.tails, path)
}

// Size is the bytes the store holds: every path and every content. A run
// counts it against its memory ceiling.
func (s *Store) Size() int64 { return s.size.Load() }

// Len is the length of the file at path, 0 when there is none. A run
// uses it to tell, before a write, how much the store would grow.
func (s *Store) Len(path string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.files[path])
}

// Glob returns the sorted paths matching pattern.
func (s *Store) Glob(pattern string) ([]string, error) {
	pat, err := compileGlob(pattern)
	if err != nil {
		return nil, err
	}
	m := newMatcher(pat)
	out := []string{}
	s.mu.RLock()
	for p := range s.files {
		if m.match(p) {
			out = append(out, p)
		}
	}
	s.mu.RUnlock()
	slices.Sort(out)
	return out, nil
}

// Exists reports whether path exists (the path is still validated).
func (s *Store) Exists(path string) (bool, error) {
	if err := ValidatePath(path); err != nil {
		return false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.files[path]
	return ok, nil
}

// Snapshot returns a copy of every file, for hosts extracting outputs.
func (s *Store) Snapshot() map[string]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]string, len(s.files))
	for p, c := range s.files {
		out[p] = c
	}
	return out
}
