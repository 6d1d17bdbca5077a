package gateway

import "testing"

// Endpoint labels only the contract's paths, wherever the API root sits,
// and folds everything else into one value.
func TestEndpointIsBounded(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/chat/completions":        PathChat,
		"/api/v1/models":              PathModels,
		"/v1/tools/web_search":        PathSearch,
		"/v1/embeddings":              PathEmbeddings,
		"/v1/completions":             EndpointOther,
		"/v1/models/extra":            EndpointOther,
		"/" + string(make([]byte, 4)): EndpointOther,
	} {
		if got := Endpoint(path); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", path, got, want)
		}
	}
}
