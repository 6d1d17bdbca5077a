package gateway

import "strings"

// The paths of the gateway contract, relative to the API root
// (gateway-picker-webfetch §1.2). Only this package sends to them; a host
// that labels gateway traffic (the server's metrics) asks [Endpoint].
const (
	PathChat   = "/chat/completions"
	PathModels = "/models"
	PathSearch = "/tools/web_search"
	// PathEmbeddings is where [Client.Embed] sends.
	PathEmbeddings = "/embeddings"
)

// EndpointOther is what [Endpoint] answers for a path outside the contract.
const EndpointOther = "other"

// Endpoint names the contract endpoint a request path addresses, or
// [EndpointOther]. The answer is one of a fixed few, so a metrics label
// built from it stays bounded whatever URL a misconfiguration produces.
func Endpoint(path string) string {
	for _, e := range []string{PathChat, PathModels, PathSearch, PathEmbeddings} {
		if strings.HasSuffix(path, e) {
			return e
		}
	}
	return EndpointOther
}
