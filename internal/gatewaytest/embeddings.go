package gatewaytest

import (
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"unicode"
)

// EnqueueEmbeddings appends scripted POST /v1/embeddings replies; each
// request takes the next one before any [Server.RespondEmbeddings] function.
func (s *Server) EnqueueEmbeddings(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedQueue = append(s.embedQueue, replies...)
}

// RespondEmbeddings computes the reply for embeddings requests that arrive
// while the queue is empty, e.g. [ScriptedEmbedder.Respond]. fn may be
// called concurrently; nil removes it.
func (s *Server) RespondEmbeddings(fn func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedFn = fn
}

// EmbeddingRequests returns the embeddings requests that reached the
// script, in arrival order.
func (s *Server) EmbeddingRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.embedReqs...)
}

// EmbeddingInputs is Body["input"] of an embeddings request as strings
// (a single string input is a list of one).
func (r Request) EmbeddingInputs() []string {
	switch in := r.Body["input"].(type) {
	case string:
		return []string{in}
	case []any:
		out := make([]string, 0, len(in))
		for _, v := range in {
			if t, ok := v.(string); ok {
				out = append(out, t)
			}
		}
		return out
	}
	return nil
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	// Ollama and OpenAI refuse a request without a model or an input.
	if m, _ := req.Body["model"].(string); strings.TrimSpace(m) == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "malformed_request", "malformed request: model is required")
		return
	}
	if len(req.EmbeddingInputs()) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "malformed_request", "malformed request: input is required")
		return
	}
	s.mu.Lock()
	s.embedReqs = append(s.embedReqs, req)
	n := len(s.embedReqs)
	reply, scripted := Reply{}, false
	if len(s.embedQueue) > 0 {
		reply, scripted = s.embedQueue[0], true
		s.embedQueue = s.embedQueue[1:]
	}
	fn := s.embedFn
	s.mu.Unlock()
	if !scripted {
		if fn == nil {
			s.unscripted(w, "embeddings ", n)
			return
		}
		reply = fn(req)
	}
	s.serve(w, r, reply, "")
}

// Embeddings is an OpenAI-shaped embeddings reply (the shape Ollama's
// /v1/embeddings sends too): {"object":"list","data":[{"object":
// "embedding","embedding":[...],"index":i}],"model":model,"usage":{...}}.
func Embeddings(model string, vecs [][]float32) Reply {
	type entry struct {
		Object    string    `json:"object"`
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	}
	data := make([]entry, len(vecs))
	for i, v := range vecs {
		data[i] = entry{Object: "embedding", Embedding: v, Index: i}
	}
	return JSON(map[string]any{
		"object": "list", "data": data, "model": model,
		"usage": map[string]int{"prompt_tokens": len(vecs), "total_tokens": len(vecs)},
	})
}

// ScriptedEmbedder is a deterministic stand-in for an embedding model: a
// text's vector is a hashed bag of its words (lower-cased, lightly
// stemmed, stop words dropped), each word first mapped through a small
// hand-written synonym table, plus a weaker hashed bag of character
// trigrams. It proves the wiring of an embedding ranker (requests,
// batching, caching, fallback, thresholds) with vectors that behave like
// an embedder's on the evaluation set's synonyms, and it is no evidence
// of any real model's quality: its "meaning" is the table.
type ScriptedEmbedder struct {
	dims    int
	concept map[string]string // stemmed word → concept; read only
	stop    map[string]bool   // stop words; read only
}

// NewScriptedEmbedder returns the scripted embedder with dims dimensions
// (256 when dims ≤ 0).
func NewScriptedEmbedder(dims int) *ScriptedEmbedder {
	if dims <= 0 {
		dims = 256
	}
	e := &ScriptedEmbedder{dims: dims, concept: map[string]string{}, stop: map[string]bool{}}
	for _, w := range strings.Fields("the and for with that this from into of to in on an is it my me be by or as at can please need want some your our its about what") {
		e.stop[w] = true
	}
	for concept, words := range scriptedSynonyms() {
		for _, w := range strings.Fields(words) {
			st := scriptedStem(w)
			if c, dup := e.concept[st]; dup && c != concept {
				// Which concept won would depend on map order: the
				// vectors must be the same on every run.
				panic(fmt.Sprintf("gatewaytest: the synonym table maps %q to both %q and %q", st, c, concept))
			}
			e.concept[st] = concept
		}
	}
	return e
}

// scriptedSynonyms is the synonym table, concept → words. It was written
// for the binding evaluation set (internal/match/testdata/eval): it is
// what makes "condense" meet "summarize" there.
func scriptedSynonyms() map[string]string {
	return map[string]string{
		"summary":   "condense summarize summarise summary summaries tldr digest gist recap shorten overview abridge",
		"document":  "article document doc paper report essay",
		"translate": "translate translation localize localise",
		"bug":       "fix bug bugs defect debug error crash broken",
		"review":    "review critique audit inspect",
		"email":     "email mail inbox",
		"meeting":   "meeting meetings standup",
		"weather":   "weather forecast rain umbrella temperature",
		"fetch":     "fetch download retrieve grab scrape",
		"search":    "search lookup google",
		"remove":    "delete remove erase purge",
		"write":     "write draft compose",
		"test":      "test tests unittest",
		"sql":       "sql query database",
		"release":   "release changelog",
		"commit":    "commit commits diff patch",
		"calendar":  "calendar event schedule appointment",
		"invoice":   "invoice bill receipt",
		"sentiment": "sentiment tone mood",
		"keyword":   "keyword keywords tag tags",
		"explain":   "explain clarify eli5 simplify",
		"regex":     "regex regexp",
		"table":     "csv spreadsheet table excel",
		"cv":        "resume cv",
		"stance":    "stance opinion stands position views",
		"code":      "code program source script",
		"cheap":     "cheap fast quick lightweight inexpensive",
		"vision":    "vision image images picture photo screenshot",
		"reason":    "careful carefully analysis analyze analyse deep reasoning tricky",
		"long":      "book books codebase codebases entire whole",
		"private":   "private machine offline",
	}
}

// Vector is text's unit vector.
func (e *ScriptedEmbedder) Vector(text string) []float32 {
	dims := e.dims
	v := make([]float64, dims)
	add := func(feature string, w float64) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(feature))
		x := h.Sum64()
		sign := 1.0
		if x&1 == 1 {
			sign = -1
		}
		v[int((x>>1)%uint64(dims))] += sign * w
	}
	for _, w := range e.words(text) {
		if c, ok := e.concept[w]; ok {
			add("c:"+c, 1.0)
			continue
		}
		add("w:"+w, 1.0)
		padded := "^" + w + "$"
		for i := 0; i+3 <= len(padded); i++ {
			add("t:"+padded[i:i+3], 0.15)
		}
	}
	out := make([]float32, dims)
	norm := 0.0
	for _, x := range v {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		// A text with no content word still gets a valid vector, as a
		// real model's would be.
		add("empty", 1)
		norm = 1
	}
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// Respond is a [Server.RespondEmbeddings] function serving Vector for
// each input in an OpenAI-shaped reply.
func (e *ScriptedEmbedder) Respond(req Request) Reply {
	model, _ := req.Body["model"].(string)
	in := req.EmbeddingInputs()
	vecs := make([][]float32, len(in))
	for i, t := range in {
		vecs[i] = e.Vector(t)
	}
	return Embeddings(model, vecs)
}

// words splits text into lower-cased, lightly stemmed words.
func (e *ScriptedEmbedder) words(text string) []string {
	fields := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if e.stop[f] || len(f) < 2 {
			continue
		}
		out = append(out, scriptedStem(f))
	}
	return out
}

// scriptedStem cuts common English endings so "summarizing",
// "summarize" and "summary" meet at "summar".
func scriptedStem(w string) string {
	for _, suf := range []string{"ization", "isation", "izing", "ising", "ize", "ise", "ing", "ed", "es", "s", "e", "y"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

// String names the embedder in test output.
func (e *ScriptedEmbedder) String() string { return fmt.Sprintf("ScriptedEmbedder(%d dims)", e.dims) }
