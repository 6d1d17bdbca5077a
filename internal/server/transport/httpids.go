package transport

import (
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
			v, ok := readView(w, r)
			if !ok {
				return
			}
			if id, problem := inexactID(v); problem != "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write(errorReply(id, codeInvalidRequest, problem))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// inexactID finds the first request of a body (one message or a batch)
// whose id idProblem refuses.
func inexactID(v *bodyView) (id []byte, problem string) {
	for i := range v.elems {
		if e := &v.elems[i]; e.obj && e.env.method != nil {
			if p := idProblem(e.env.id); p != "" {
				return e.env.id, p
			}
		}
	}
	return nil, ""
}
