package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Bounds of POST {base}/embeddings (gateway-picker-webfetch §1.6). An
// embeddings request is short work for the server, so it has its own
// timeout rather than the chat request's two minutes: a binding waits on
// it, and a silent server should turn into the lexical fallback soon.
const (
	// DefaultEmbeddingsTimeout bounds one embeddings request when
	// [Options.EmbeddingsTimeout] is zero.
	DefaultEmbeddingsTimeout = 30 * time.Second
	// MaxEmbeddingsBatch is the most texts one request carries; Embed
	// splits a longer list. OpenAI accepts 2,048 inputs per request; 64
	// keeps one request's reply (64 × 3,072 floats as JSON, about 4 MiB)
	// well under [MaxReplyBytes] for the largest common models.
	MaxEmbeddingsBatch = 64
	// MaxEmbeddingDims refuses a vector longer than any served model's
	// (text-embedding-3-large has 3,072), so a broken reply cannot make
	// the caller hold gigabytes.
	MaxEmbeddingDims = 8192

	opEmbeddings = "POST /embeddings"
)

// Embed sends POST {base}/embeddings for texts with the given model and
// returns one vector per text, in order. Texts are sent in batches of at
// most [MaxEmbeddingsBatch]; each request is bounded by
// [Options.EmbeddingsTimeout] and by ctx, and its reply by [MaxReplyBytes].
//
// The request is OpenAI's: {"model", "input": [texts], "encoding_format":
// "float"}, which Ollama, vLLM, llama.cpp, LiteLLM and OpenAI all accept.
// The reply must be {"data": [{"index", "embedding": [numbers]}]} with one
// entry per input (in any order: index places it), every vector the same
// non-zero length and every number finite. Errors are *Error as for
// Complete: KindStatus quoting the server's reason (a chat model asked for
// embeddings says so there), KindMalformed, KindTransport (Timeout),
// KindCancelled, KindConfig, KindDisabled.
func (c *Client) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if c.disabled != "" {
		return nil, c.disabledError(opEmbeddings)
	}
	if strings.TrimSpace(model) == "" {
		return nil, configError("embeddings model is empty: set [retrieval] embeddings_model to a model the server serves for embeddings")
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += MaxEmbeddingsBatch {
		batch := texts[start:min(start+MaxEmbeddingsBatch, len(texts))]
		vecs, err := c.embedBatch(ctx, model, batch)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(vecs[0]) != len(out[0]) {
			return nil, malformed(opEmbeddings, 200, fmt.Sprintf("one batch has %d dimensions and another %d", len(out[0]), len(vecs[0])))
		}
		out = append(out, vecs...)
	}
	return out, nil
}

type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

func (c *Client) embedBatch(ctx context.Context, model string, texts []string) ([][]float32, error) {
	body, err := json.Marshal(embeddingsRequest{Model: model, Input: texts, EncodingFormat: "float"})
	if err != nil {
		return nil, &Error{Kind: KindConfig, Op: opEmbeddings, msg: "cannot encode the embeddings request: " + err.Error(), err: err}
	}
	status, resp, herr := c.do(ctx, "POST", PathEmbeddings, opEmbeddings, body, c.embeddingsTimeout)
	if herr == nil && (status < 200 || status > 299) {
		herr = statusError(opEmbeddings, status, resp, c.key.Reveal())
	}
	if herr != nil {
		return nil, herr
	}
	vecs, problem := decodeEmbeddings(resp, len(texts))
	if problem != "" {
		return nil, malformed(opEmbeddings, status, problem)
	}
	return vecs, nil
}

// decodeEmbeddings checks an embeddings reply for n inputs and returns the
// vectors in input order, or what is wrong.
func decodeEmbeddings(body []byte, n int) ([][]float32, string) {
	var reply struct {
		Data *[]struct {
			Index     *int            `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, "not a JSON object with a data array"
	}
	if reply.Data == nil {
		return nil, "no data array"
	}
	if len(*reply.Data) != n {
		return nil, fmt.Sprintf("%d embeddings for %d inputs", len(*reply.Data), n)
	}
	out := make([][]float32, n)
	for i, d := range *reply.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= n || out[at] != nil {
			return nil, fmt.Sprintf("entry %d has a missing, repeated or out-of-range index", i)
		}
		var v []float64
		if len(d.Embedding) > 0 && d.Embedding[0] == '"' {
			return nil, fmt.Sprintf("entry %d is base64-encoded; the server ignored encoding_format \"float\"", i)
		}
		if err := json.Unmarshal(d.Embedding, &v); err != nil || len(v) == 0 {
			return nil, fmt.Sprintf("entry %d has no embedding array of numbers", i)
		}
		if len(v) > MaxEmbeddingDims {
			return nil, fmt.Sprintf("entry %d has %d dimensions, more than %d", i, len(v), MaxEmbeddingDims)
		}
		vec := make([]float32, len(v))
		for j, x := range v {
			f := float32(x)
			if math.IsNaN(x) || math.IsInf(float64(f), 0) {
				return nil, fmt.Sprintf("entry %d has a non-finite number", i)
			}
			vec[j] = f
		}
		out[at] = vec
	}
	for i := 1; i < n; i++ {
		if len(out[i]) != len(out[0]) {
			return nil, fmt.Sprintf("embeddings have %d and %d dimensions", len(out[0]), len(out[i]))
		}
	}
	return out, ""
}

// ModelEmbedder is [Client.Embed] bound to one model: the embedder
// internal/match's rankers ask for.
type ModelEmbedder struct {
	c     *Client
	model string
}

// Embedder returns c's embeddings call for model.
func (c *Client) Embedder(model string) ModelEmbedder { return ModelEmbedder{c: c, model: model} }

// Embed embeds texts with the bound model (see [Client.Embed]).
func (e ModelEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.c.Embed(ctx, e.model, texts)
}

// Model is the bound model id.
func (e ModelEmbedder) Model() string { return e.model }
