package embedcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
)

// DefaultMaxEntries bounds the vectors a Cache holds when
// Options.MaxEntries is zero: enough for every prompt, tool and model of
// a large catalog and the distinct needs of many runs (at 1,536
// dimensions, about 60 MiB).
const DefaultMaxEntries = 10000

// fileFormat is written into the file; a file of another format is
// ignored, so a change of layout never misreads an old cache.
const fileFormat = 1

// Embedder is what the cache wraps: one vector per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Options configure New.
type Options struct {
	// Model is the embeddings model id the vectors belong to; a file
	// written for another model is not used.
	Model string
	// Path is the cache file; "" keeps vectors in memory only.
	Path string
	// MaxEntries bounds the vectors held (DefaultMaxEntries when ≤ 0).
	MaxEntries int
	// Logger receives the lines about the file; nil discards them.
	Logger *slog.Logger
}

type key [sha256.Size]byte

// Cache is an Embedder that remembers vectors by text hash.
type Cache struct {
	inner Embedder
	model string
	path  string
	max   int
	log   *slog.Logger

	mu    sync.Mutex
	vecs  map[key][]float32
	order []key // insertion order, oldest first, for eviction
	dirty bool  // vectors not yet on disk
	hits  int
	miss  int

	// saving serialises writes of the file.
	saving sync.Mutex
}

// New returns a cache over inner, loading opts.Path if it exists.
func New(inner Embedder, opts Options) *Cache {
	c := &Cache{inner: inner, model: opts.Model, path: opts.Path, max: opts.MaxEntries, log: opts.Logger, vecs: map[key][]float32{}}
	if c.max <= 0 {
		c.max = DefaultMaxEntries
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.path != "" {
		c.load()
	}
	return c
}

// Stats reports how many texts were answered from the cache and how many
// were embedded, since New.
func (c *Cache) Stats() (hits, misses int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.miss
}

// Len is the number of vectors held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.vecs)
}

// Embed answers texts from the cache, embedding the ones it lacks (each
// distinct text once) in one call to the wrapped embedder.
func (c *Cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var missing []string
	at := map[key][]int{}
	c.mu.Lock()
	for i, t := range texts {
		k := sha256.Sum256([]byte(t))
		if v, ok := c.vecs[k]; ok {
			out[i] = v
			c.hits++
			continue
		}
		if _, seen := at[k]; !seen {
			missing = append(missing, t)
		}
		at[k] = append(at[k], i)
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	vecs, err := c.inner.Embed(ctx, missing)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(missing) {
		return nil, fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(missing))
	}
	c.mu.Lock()
	for j, t := range missing {
		k := sha256.Sum256([]byte(t))
		for _, i := range at[k] {
			out[i] = vecs[j]
		}
		c.put(k, vecs[j])
	}
	c.miss += len(missing)
	c.dirty = true
	c.mu.Unlock()
	if len(missing) > 1 {
		c.flush()
	}
	return out, nil
}

// put stores v under k, forgetting the oldest vectors past the bound.
// The caller holds mu.
func (c *Cache) put(k key, v []float32) {
	if _, ok := c.vecs[k]; !ok {
		c.order = append(c.order, k)
	}
	c.vecs[k] = v
	for len(c.vecs) > c.max {
		delete(c.vecs, c.order[0])
		c.order = c.order[1:]
	}
}

// Close writes vectors not yet on disk. The cache stays usable.
func (c *Cache) Close() error { return c.flush() }

// file is the on-disk form.
type file struct {
	Format  int
	Model   string
	Keys    []key
	Vectors [][]float32
}

func (c *Cache) load() {
	data, err := os.ReadFile(c.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		c.log.Warn("the embeddings cache cannot be read; starting empty, and it is rewritten on the next save", "path", c.path, "error", err)
		return
	}
	var f file
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&f); err != nil || len(f.Keys) != len(f.Vectors) {
		c.log.Warn("the embeddings cache is corrupt; ignoring it, and it is rewritten on the next save", "path", c.path, "error", err)
		return
	}
	switch {
	case f.Format != fileFormat:
		c.log.Info("the embeddings cache has another format; ignoring it", "path", c.path, "format", f.Format)
		return
	case f.Model != c.model:
		c.log.Info("the embeddings cache holds another model's vectors; ignoring it", "path", c.path, "cached_model", f.Model, "model", c.model)
		return
	}
	dims := soundLength(f.Vectors)
	dropped := 0
	for i, k := range f.Keys {
		if v := f.Vectors[i]; len(v) == dims && finite(v) {
			c.put(k, v)
		} else {
			dropped++
		}
	}
	if dropped > 0 {
		// The file is read, not trusted: served from here, a vector the
		// ranker refuses would fail every ranking that needs its text,
		// for as long as the entry lives.
		c.log.Warn(fmt.Sprintf("the embeddings cache holds %d vectors no embedder returns (empty, not finite, or of another length than the others); they are embedded again", dropped), "path", c.path)
	}
	c.log.Debug("embeddings cache loaded", "path", c.path, "vectors", len(c.vecs))
}

// soundLength is the length most of vecs' finite, non-empty vectors have
// (one model gives one length); 0 when there are none.
func soundLength(vecs [][]float32) int {
	count := map[int]int{}
	best := 0
	for _, v := range vecs {
		if len(v) == 0 || !finite(v) {
			continue
		}
		count[len(v)]++
		if n := count[len(v)]; n > count[best] || (n == count[best] && len(v) < best) {
			best = len(v)
		}
	}
	return best
}

func finite(v []float32) bool {
	for _, x := range v {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}

// flush writes the file when there is something new; a failure is logged
// and returned, and the vectors stay in memory for the next try.
func (c *Cache) flush() error {
	if c.path == "" {
		return nil
	}
	c.saving.Lock()
	defer c.saving.Unlock()
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	f := file{Format: fileFormat, Model: c.model, Keys: make([]key, 0, len(c.vecs)), Vectors: make([][]float32, 0, len(c.vecs))}
	for _, k := range c.order {
		f.Keys = append(f.Keys, k)
		f.Vectors = append(f.Vectors, c.vecs[k])
	}
	c.dirty = false
	c.mu.Unlock()
	if err := writeAtomic(c.path, f); err != nil {
		c.mu.Lock()
		c.dirty = true
		c.mu.Unlock()
		c.log.Warn("the embeddings cache cannot be written; vectors stay in memory", "path", c.path, "error", err)
		return err
	}
	return nil
}

func writeAtomic(path string, f file) (err error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(f); err != nil {
		return fmt.Errorf("encode the embeddings cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write the embeddings cache: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write the embeddings cache: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync the embeddings cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the embeddings cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace the embeddings cache: %w", err)
	}
	return nil
}
