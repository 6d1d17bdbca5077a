package match

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// BM25 term-frequency saturation and length normalisation, at the values
// the BM25 literature settled on; calibration did not need them moved.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Lexical is the pure-Go default ranker: BM25-weighted bag-of-words
// vectors over each doc's Text, L2-normalised and compared by cosine.
//
// BM25 is used only to weight terms (saturating repeated words,
// discounting long texts, and favouring rare words through IDF); the
// score is the cosine of two unit vectors, so it lies in [0,1], is 1 for
// texts with the same terms, and is symmetric, which the twin check needs.
// IDF is smoothed (1 + ln((N+1)/(df+1))) so a word every doc shares, like
// "model" in a model catalog, still counts instead of vanishing.
type Lexical struct{}

// NewLexical returns the lexical ranker.
func NewLexical() Lexical { return Lexical{} }

// Index builds the term vectors for docs. It never fails for valid input;
// it honours ctx only so that callers treat every Ranker alike.
//
// A catalog re-indexes on every ranking change, so the build avoids
// per-doc allocations: terms are interned straight from the tokenizer's
// buffer, and all doc vectors and all postings each share one array.
func (Lexical) Index(ctx context.Context, docs []Doc) (Index, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("index %d docs: %w", len(docs), err)
	}
	ix := &lexIndex{
		docs:  slices.Clone(docs),
		vocab: make(map[string]int32),
		vecs:  make([][]weight, len(docs)),
	}
	// First pass: each doc's distinct term ids with their counts, laid
	// end to end in counts (doc i's run ends at ends[i]), its length in
	// terms, and each term's document frequency.
	var (
		counts   []weight // w holds the term count until the second pass
		ends     = make([]int, len(docs))
		lens     = make([]int, len(docs))
		df       []int32
		ids      []int32
		tok      tokenizer
		totalLen int
	)
	intern := func(term []byte) {
		id, ok := ix.vocab[string(term)]
		if !ok {
			id = int32(len(df))
			ix.vocab[string(term)] = id
			df = append(df, 0)
		}
		ids = append(ids, id)
	}
	for i := range docs {
		ids = ids[:0]
		docTerms(&tok, docs[i], intern)
		slices.Sort(ids)
		for j := 0; j < len(ids); {
			k := j + 1
			for k < len(ids) && ids[k] == ids[j] {
				k++
			}
			counts = append(counts, weight{id: ids[j], w: float64(k - j)})
			df[ids[j]]++
			j = k
		}
		ends[i], lens[i] = len(counts), len(ids)
		totalLen += len(ids)
	}
	n := float64(len(docs))
	ix.idf = make([]float64, len(df))
	for id, f := range df {
		ix.idf[id] = smoothIDF(n, float64(f))
	}
	ix.unseenIDF = smoothIDF(n, 0)
	if len(docs) > 0 {
		ix.avgLen = float64(totalLen) / n
	}
	// Second pass: weigh and normalise each doc's run in place (it is
	// already sorted by term id), and file it under its terms' postings,
	// each cut to its exact size from one array.
	flat := make([]posting, len(counts))
	ix.postings = make([][]posting, len(df))
	off := 0
	for id, f := range df {
		ix.postings[id] = flat[off : off : off+int(f)]
		off += int(f)
	}
	start := 0
	for i, end := range ends {
		v := counts[start:end:end]
		norm := 0.0
		for k := range v {
			w := ix.tfWeight(int(v[k].w), lens[i]) * ix.idf[v[k].id]
			v[k].w = w
			norm += w * w
		}
		norm = math.Sqrt(norm)
		for k := range v {
			v[k].w /= norm
			ix.postings[v[k].id] = append(ix.postings[v[k].id], posting{doc: int32(i), w: v[k].w})
		}
		ix.vecs[i] = v
		start = end
	}
	return ix, nil
}

// docTerms feeds fn the terms of d.Text() without building that string:
// its separators (". ", "parameters: ", ", ") never join two words, and
// "_" in the name splits words as the space Text puts there does, so the
// parts can be tokenized one by one.
func docTerms(t *tokenizer, d Doc, fn func([]byte)) {
	t.each(d.Name, fn)
	t.each(d.Description, fn)
	if len(d.Params) > 0 {
		t.each("parameters", fn)
		for _, p := range d.Params {
			t.each(p, fn)
		}
	}
}

func smoothIDF(n, df float64) float64 { return 1 + math.Log((n+1)/(df+1)) }

type termCount struct {
	term string
	n    int
}

// countTerms turns a term list into distinct terms with their counts. It
// sorts terms in place.
func countTerms(terms []string) []termCount {
	slices.Sort(terms)
	var out []termCount
	for i := 0; i < len(terms); {
		j := i + 1
		for j < len(terms) && terms[j] == terms[i] {
			j++
		}
		out = append(out, termCount{term: terms[i], n: j - i})
		i = j
	}
	return out
}

type weight struct {
	id int32
	w  float64
}

type posting struct {
	doc int32
	w   float64
}

type lexIndex struct {
	docs      []Doc
	vocab     map[string]int32
	idf       []float64
	unseenIDF float64
	avgLen    float64
	vecs      [][]weight // unit vectors, sorted by term id
	postings  [][]posting
}

// tfWeight is BM25's saturating term frequency for a text of length n.
func (ix *lexIndex) tfWeight(tf, n int) float64 {
	norm := 1.0
	if ix.avgLen > 0 {
		norm = 1 - bm25B + bm25B*float64(n)/ix.avgLen
	}
	f := float64(tf)
	return f * (bm25K1 + 1) / (f + bm25K1*norm)
}

func (ix *lexIndex) Len() int { return len(ix.docs) }

func (ix *lexIndex) Doc(i int) Doc { return ix.docs[i] }

// Score embeds need like a doc (same tokenizer, same IDF table) and
// returns its cosine with every doc. Need words no doc contains still
// count toward the need's length, so a need that is mostly about
// something else scores low everywhere.
func (ix *lexIndex) Score(ctx context.Context, need string) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	scores := make([]float64, len(ix.docs))
	terms := appendTerms(nil, need)
	if len(terms) == 0 {
		return scores, nil
	}
	norm := 0.0
	for _, t := range countTerms(terms) {
		id, known := ix.vocab[t.term]
		idf := ix.unseenIDF
		if known {
			idf = ix.idf[id]
		}
		w := ix.tfWeight(t.n, len(terms)) * idf
		norm += w * w
		if known {
			for _, p := range ix.postings[id] {
				scores[p.doc] += w * p.w
			}
		}
	}
	norm = math.Sqrt(norm)
	for i := range scores {
		scores[i] = clamp01(scores[i] / norm)
	}
	return scores, nil
}

// DocSimilarity is the cosine of two stored doc vectors.
func (ix *lexIndex) DocSimilarity(i, j int) float64 {
	a, b := ix.vecs[i], ix.vecs[j]
	dot := 0.0
	for x, y := 0, 0; x < len(a) && y < len(b); {
		switch {
		case a[x].id < b[y].id:
			x++
		case a[x].id > b[y].id:
			y++
		default:
			dot += a[x].w * b[y].w
			x++
			y++
		}
	}
	return clamp01(dot)
}

// clamp01 absorbs rounding (a self-similarity of 1.0000000000000002) so
// scores stay in the promised range.
func clamp01(f float64) float64 { return min(max(f, 0), 1) }
