package transport

import (
	"encoding/json"
	"net/http"
)

// exactIDs refuses, with HTTP 400 and a JSON-RPC -32600 under the id as
// sent, a POST carrying a request whose id the SDK would answer under
// another id (idProblem: go-sdk v1.8.0 turns a numeric id into an int64
// through float64, so 1.5 comes back as 1 and 2^70 as -2^63; issue #11
// item 8). Everything else, malformed bodies included, goes to next,
// which answers them as before.
func exactIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, ok := readBody(w, r)
			if !ok {
				return
			}
			if id, problem := inexactID(body); problem != "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write(errorReply(id, codeInvalidRequest, problem))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// inexactID finds the first request in body (one message or a batch)
// whose id idProblem refuses.
func inexactID(body []byte) (id []byte, problem string) {
	if !json.Valid(body) {
		return nil, ""
	}
	check := func(msg []byte) bool {
		if e, ok := scanEnvelope(msg); ok && e.method != nil {
			if p := idProblem(e.id); p != "" {
				id, problem = e.id, p
				return false
			}
		}
		return true
	}
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '[' {
		check(body)
		return id, problem
	}
	for i = skipSpace(body, i+1); i < len(body) && body[i] != ']'; {
		end, _ := skipValue(body, i)
		if !check(body[i:end]) {
			return id, problem
		}
		i = skipSpace(body, end)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return nil, ""
}
