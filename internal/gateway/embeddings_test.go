package gateway_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// recordedEmbeddings is one file of testdata/embeddings (README.md there
// names the sources).
type recordedEmbeddings struct {
	Request map[string]any  `json:"request"`
	Status  int             `json:"status"`
	Reply   json.RawMessage `json:"reply"`
}

func loadEmbeddings(t *testing.T, name string) recordedEmbeddings {
	t.Helper()
	data, err := os.ReadFile("testdata/embeddings/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var r recordedEmbeddings
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func TestEmbedSpeaksTheRecordedOllamaAndOpenAIShapes(t *testing.T) {
	for _, name := range []string{"ollama", "openai"} {
		t.Run(name, func(t *testing.T) {
			rec := loadEmbeddings(t, name)
			gw := gatewaytest.New(t)
			c := newClient(t, gw)
			gw.EnqueueEmbeddings(gatewaytest.Status(rec.Status, string(rec.Reply)))
			model := rec.Request["model"].(string)
			var texts []string
			for _, v := range rec.Request["input"].([]any) {
				texts = append(texts, v.(string))
			}
			vecs, err := c.Embed(t.Context(), model, texts)
			if err != nil {
				t.Fatal(err)
			}
			reqs := gw.EmbeddingRequests()
			if len(reqs) != 1 || !reflect.DeepEqual(reqs[0].Body, rec.Request) {
				t.Fatalf("sent %v, want the recorded request %v", reqs, rec.Request)
			}
			if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer "+gw.APIKey() {
				t.Errorf("Authorization %q", auth)
			}
			// Vectors come back in input order, whatever order the
			// server lists them in (the openai recording is shuffled).
			var reply struct {
				Data []struct {
					Index     int       `json:"index"`
					Embedding []float32 `json:"embedding"`
				} `json:"data"`
			}
			if err := json.Unmarshal(rec.Reply, &reply); err != nil {
				t.Fatal(err)
			}
			for _, d := range reply.Data {
				if !reflect.DeepEqual(vecs[d.Index], d.Embedding) {
					t.Errorf("vector %d = %v, want %v", d.Index, vecs[d.Index], d.Embedding)
				}
			}
		})
	}
}

func TestEmbedBatchesLongLists(t *testing.T) {
	gw := gatewaytest.New(t)
	c := newClient(t, gw)
	emb := gatewaytest.NewScriptedEmbedder(16)
	gw.RespondEmbeddings(emb.Respond)
	texts := make([]string, 2*gateway.MaxEmbeddingsBatch+3)
	for i := range texts {
		texts[i] = fmt.Sprintf("text number %d", i)
	}
	vecs, err := c.Embed(t.Context(), "m", texts)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, r := range gw.EmbeddingRequests() {
		sizes = append(sizes, len(r.EmbeddingInputs()))
	}
	if want := []int{gateway.MaxEmbeddingsBatch, gateway.MaxEmbeddingsBatch, 3}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("batches %v, want %v", sizes, want)
	}
	for i, text := range texts {
		if !reflect.DeepEqual(vecs[i], emb.Vector(text)) {
			t.Fatalf("vector %d is not %q's", i, text)
		}
	}
}

func TestEmbedErrors(t *testing.T) {
	ollama404, notEmb := loadEmbeddings(t, "ollama-404"), loadEmbeddings(t, "ollama-not-embedding")
	vec := `[0.1,0.2]`
	tests := []struct {
		name  string
		reply gatewaytest.Reply
		kind  gateway.Kind
		want  string
	}{
		{"not pulled", gatewaytest.Status(ollama404.Status, string(ollama404.Reply)), gateway.KindStatus,
			`gateway returned 404 for POST /embeddings: check that the gateway URL is the API root (it usually ends in /v1) and that the model id is served: the model server said: "model "all-minilm" not found, try pulling it first"`},
		{"chat model", gatewaytest.Status(notEmb.Status, string(notEmb.Reply)), gateway.KindStatus, `the model server said: ""llama3.2" does not support embeddings"`},
		{"not json", gatewaytest.Malformed("<html>"), gateway.KindMalformed, "not a JSON object with a data array"},
		{"no data", gatewaytest.Malformed(`{"object":"list"}`), gateway.KindMalformed, "no data array"},
		{"too few", gatewaytest.Malformed(`{"data":[{"index":0,"embedding":` + vec + `}]}`), gateway.KindMalformed, "1 embeddings for 2 inputs"},
		{"repeated index", gatewaytest.Malformed(`{"data":[{"index":0,"embedding":` + vec + `},{"index":0,"embedding":` + vec + `}]}`), gateway.KindMalformed, "entry 1 has a missing, repeated or out-of-range index"},
		{"base64", gatewaytest.Malformed(`{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"}]}`), gateway.KindMalformed, `entry 0 is base64-encoded`},
		{"empty vector", gatewaytest.Malformed(`{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]}`), gateway.KindMalformed, "entry 0 has no embedding array of numbers"},
		{"ragged", gatewaytest.Malformed(`{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}`), gateway.KindMalformed, "embeddings have 2 and 1 dimensions"},
		{"overflow", gatewaytest.Malformed(`{"data":[{"index":0,"embedding":[1e300]},{"index":1,"embedding":[1]}]}`), gateway.KindMalformed, "entry 0 has a non-finite number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gw := gatewaytest.New(t)
			c := newClient(t, gw)
			gw.EnqueueEmbeddings(tc.reply)
			_, err := c.Embed(t.Context(), "all-minilm", []string{"a", "b"})
			if err == nil {
				t.Fatal("no error")
			}
			ge := asError(t, err, tc.kind)
			if !strings.Contains(err.Error(), tc.want) || ge.Op != "POST /embeddings" {
				t.Errorf("error %q (op %q), want it to contain %q", err, ge.Op, tc.want)
			}
			if strings.Contains(err.Error(), gw.APIKey()) {
				t.Error("the key leaked")
			}
		})
	}
}

func TestEmbedRefusesABlankModelWithoutSending(t *testing.T) {
	gw := gatewaytest.New(t)
	_, err := newClient(t, gw).Embed(t.Context(), " ", []string{"a"})
	if asError(t, err, gateway.KindConfig); !strings.Contains(err.Error(), "[retrieval] embeddings_model") {
		t.Errorf("error %v", err)
	}
	if n := len(gw.EmbeddingRequests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestEmbedOnADisabledClient(t *testing.T) {
	_, err := gateway.NewDisabled("set the URL").Embed(t.Context(), "m", []string{"a"})
	asError(t, err, gateway.KindDisabled)
}

func TestEmbeddingsTimeoutOnAFakeClock(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{{0, gateway.DefaultEmbeddingsTimeout}, {5 * time.Second, 5 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			silentGateway(t, gateway.Options{EmbeddingsTimeout: tc.set}, func(c *gateway.Client) {
				start := time.Now()
				_, err := c.Embed(t.Context(), "m", []string{"a"})
				if got := time.Since(start); got != tc.want {
					t.Errorf("gave up after %v, want %v", got, tc.want)
				}
				if ge := asError(t, err, gateway.KindTransport); !ge.Timeout() || !strings.Contains(err.Error(), "raise [retrieval].timeout") {
					t.Errorf("error %v", err)
				}
			})
		})
	}
}
