package embedcache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/promptforge-go/promptforge/internal/embedcache"
)

// countingEmbedder records every batch it is asked for; a text's vector
// is its length and first byte, so each text has its own.
type countingEmbedder struct {
	mu      sync.Mutex
	batches [][]string
	fail    error
}

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.batches = append(e.batches, slices.Clone(texts))
	if e.fail != nil {
		return nil, e.fail
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = vec(t)
	}
	return out, nil
}

func vec(t string) []float32 { return []float32{float32(len(t)), float32(t[0])} }

func embed(t *testing.T, c *embedcache.Cache, texts ...string) {
	t.Helper()
	got, err := c.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !reflect.DeepEqual(got[i], vec(text)) {
			t.Fatalf("vector %d for %q = %v", i, text, got[i])
		}
	}
}

func TestCacheEmbedsOnlyWhatItLacksOnce(t *testing.T) {
	e := &countingEmbedder{}
	c := embedcache.New(e, embedcache.Options{Model: "m"})
	embed(t, c, "alpha", "beta", "alpha")
	embed(t, c, "beta", "gamma", "alpha")
	embed(t, c, "gamma")
	want := [][]string{{"alpha", "beta"}, {"gamma"}}
	if !reflect.DeepEqual(e.batches, want) {
		t.Errorf("batches %q, want %q", e.batches, want)
	}
	if h, m := c.Stats(); h != 3 || m != 3 {
		t.Errorf("hits %d misses %d, want 3 and 3", h, m)
	}
}

func TestCacheKeepsNothingFromAFailedCall(t *testing.T) {
	e := &countingEmbedder{fail: errors.New("connection refused")}
	c := embedcache.New(e, embedcache.Options{Model: "m"})
	if _, err := c.Embed(t.Context(), []string{"a"}); err == nil || err.Error() != "connection refused" {
		t.Fatalf("error %v", err)
	}
	if c.Len() != 0 {
		t.Errorf("%d vectors kept", c.Len())
	}
}

func TestCacheForgetsTheOldestPastItsBound(t *testing.T) {
	e := &countingEmbedder{}
	c := embedcache.New(e, embedcache.Options{Model: "m", MaxEntries: 2})
	embed(t, c, "a1", "b22", "c333")
	if c.Len() != 2 {
		t.Fatalf("%d vectors held, want 2", c.Len())
	}
	embed(t, c, "b22", "c333")
	embed(t, c, "a1")
	if n := len(e.batches); n != 2 {
		t.Errorf("%d batches, want 2 (only the evicted a1 embedded again)", n)
	}
}

func TestCacheFileSurvivesARestartForTheSameModelOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vectors.cache")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	first := &countingEmbedder{}
	c := embedcache.New(first, embedcache.Options{Model: "m", Path: path, Logger: log})
	embed(t, c, "prompt one", "prompt two")
	embed(t, c, "a need") // one text: not written yet
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no file after an index batch: %v", err)
	}
	again := &countingEmbedder{}
	embed(t, embedcache.New(again, embedcache.Options{Model: "m", Path: path}), "prompt one", "prompt two", "a need")
	if want := [][]string{{"a need"}}; !reflect.DeepEqual(again.batches, want) {
		t.Fatalf("after a restart embedded %q, want %q", again.batches, want)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	third := &countingEmbedder{}
	embed(t, embedcache.New(third, embedcache.Options{Model: "m", Path: path}), "prompt one", "a need")
	if len(third.batches) != 0 {
		t.Fatalf("after Close embedded %q, want nothing", third.batches)
	}

	other := &countingEmbedder{}
	embed(t, embedcache.New(other, embedcache.Options{Model: "other", Path: path, Logger: log}), "prompt one")
	if len(other.batches) != 1 || !strings.Contains(logs.String(), "another model's vectors") {
		t.Fatalf("another model used the file: %q\n%s", other.batches, logs.String())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("files left beside the cache: %v", entries)
	}
}

func TestCorruptCacheIsIgnoredAndReplaced(t *testing.T) {
	for name, content := range map[string][]byte{"garbage": []byte("not a gob file"), "empty": {}} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vectors.cache")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			e := &countingEmbedder{}
			c := embedcache.New(e, embedcache.Options{Model: "m", Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if !strings.Contains(logs.String(), "the embeddings cache is corrupt") {
				t.Errorf("log:\n%s", logs.String())
			}
			embed(t, c, "x1", "y22")
			again := &countingEmbedder{}
			embed(t, embedcache.New(again, embedcache.Options{Model: "m", Path: path}), "x1", "y22")
			if len(again.batches) != 0 {
				t.Errorf("the corrupt file was not replaced: embedded %q", again.batches)
			}
		})
	}
}

func TestCacheWriteFailureIsLoggedNotFatal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "vectors.cache")
	var logs bytes.Buffer
	c := embedcache.New(&countingEmbedder{}, embedcache.Options{Model: "m", Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	embed(t, c, "a1", "b22")
	if !strings.Contains(logs.String(), "cannot be written") {
		t.Errorf("log:\n%s", logs.String())
	}
	if err := c.Close(); err == nil {
		t.Error("Close reported no error for an unwritable path")
	}
}

// A cache file is read, not trusted: a vector no embedder could have
// returned (empty, not finite) or of another length than the file's
// others is dropped at load and embedded afresh, so one bad entry does
// not fail every ranking that needs its text (a vector the ranker refuses
// would otherwise be served from the cache forever).
func TestHostileCacheEntriesAreEmbeddedAfresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vectors.cache")
	nan := float32(math.NaN())
	entries := map[string][]float32{
		"delta": vec("delta"), "epsilon": vec("epsilon"), "zeta": vec("zeta"),
		"alpha": {nan, 1}, "beta": {}, "gamma": {1, 2, 3},
	}
	type file struct {
		Format  int
		Model   string
		Keys    [][sha256.Size]byte
		Vectors [][]float32
	}
	f := file{Format: 1, Model: "m"}
	for _, text := range []string{"delta", "alpha", "beta", "gamma", "epsilon", "zeta"} {
		f.Keys = append(f.Keys, sha256.Sum256([]byte(text)))
		f.Vectors = append(f.Vectors, entries[text])
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	e := &countingEmbedder{}
	c := embedcache.New(e, embedcache.Options{Model: "m", Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if n := c.Len(); n != 3 {
		t.Errorf("loaded %d vectors, want the 3 sound ones", n)
	}
	embed(t, c, "alpha", "beta", "gamma", "delta", "epsilon", "zeta")
	if want := [][]string{{"alpha", "beta", "gamma"}}; !reflect.DeepEqual(e.batches, want) {
		t.Errorf("embedded %q, want %q", e.batches, want)
	}
	if !strings.Contains(logs.String(), "3 vectors") {
		t.Errorf("the dropped entries are not logged:\n%s", logs.String())
	}
}
