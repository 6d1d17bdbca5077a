package gatewaytest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// maxRequestBody bounds what the server reads from a request, like the
// real gateway's body limit.
const maxRequestBody = 16 << 20

// Server is a scripted gateway on 127.0.0.1. All methods are safe for
// concurrent use.
type Server struct {
	t         testing.TB
	srv       *httptest.Server
	key       string
	done      chan struct{}
	closeOnce sync.Once

	mu          sync.Mutex
	modelsBody  []byte
	modelsReply *Reply
	modelsCalls int
	queue       []Reply
	respond     func(Request) Reply
	requests    []Request
	inFlight    int
	maxInFlight int
	searchQueue []Reply
	searchReqs  []Request
	embedQueue  []Reply
	embedFn     func(Request) Reply
	embedReqs   []Request
}

// Request is one recorded request as the server decoded it.
type Request struct {
	// Body is the JSON body decoded once into generic values (numbers are
	// float64).
	Body map[string]any
	// Raw is the body exactly as sent.
	Raw    []byte
	Header http.Header
	// Messages is Body["messages"] as objects (chat requests only).
	Messages []map[string]any
}

// New starts a server that is closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	return start(t, nil, "")
}

// NewAt is New listening on addr (host:port) with apiKey as its token
// ("" makes a random one): for a test that points a server at an address
// before anything listens there, then starts the gateway.
func NewAt(t testing.TB, addr, apiKey string) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("gatewaytest.NewAt: %v", err)
	}
	return start(t, ln, apiKey)
}

// start serves on ln, or on a free 127.0.0.1 port when ln is nil, with
// key as the token ("" a random one).
func start(t testing.TB, ln net.Listener, key string) *Server {
	t.Helper()
	if key == "" {
		key = "gatewaytest-" + rand.Text()
	}
	s := &Server{
		t:    t,
		key:  key,
		done: make(chan struct{}),
	}
	s.SetModels(map[string]any{
		"id":          "test-model",
		"object":      "model",
		"description": "A general assistant model for tests",
		"context":     32768,
		"thinking":    "never",
	})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /v1/tools/web_search", s.handleSearch)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, http.StatusOK, []byte(`{"status":"serving"}`))
	})
	s.srv = httptest.NewUnstartedServer(mux)
	if ln != nil {
		s.srv.Listener.Close()
		s.srv.Listener = ln
	}
	s.srv.Start()
	t.Cleanup(s.Close)
	return s
}

// URL is the API root including /v1, e.g. http://127.0.0.1:34567/v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// APIKey is the only bearer token the server accepts. It is random per
// server so a test can check it never leaks into output.
func (s *Server) APIKey() string { return s.key }

// Close stops the server now, dropping any request held by [Hang] or a [Gate]
// so nothing waits on it; later requests fail to connect. It runs
// automatically when the test ends and is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// SetModels replaces the /v1/models data entries. Entries are sent as
// given, so a test can serve a plain OpenAI list or a malformed one.
func (s *Server) SetModels(entries ...map[string]any) {
	if entries == nil {
		entries = []map[string]any{}
	}
	body, err := json.Marshal(map[string]any{"object": "list", "data": entries})
	if err != nil {
		panic(fmt.Sprintf("gatewaytest.SetModels: cannot marshal entries: %v", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsBody = body
	s.modelsReply = nil
}

// SetModelsReply makes /v1/models answer r (e.g. Status(503, ...), Hang(),
// Malformed(...)) instead of the entries, until the next SetModels.
func (s *Server) SetModelsReply(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsReply = &r
}

// ModelsCalls is how many authorised /v1/models requests arrived.
func (s *Server) ModelsCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modelsCalls
}

// Enqueue appends scripted chat replies; each request takes the next one.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Respond computes the reply for chat requests that arrive while the
// queue is empty. fn may be called concurrently.
func (s *Server) Respond(fn func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = fn
}

// Requests returns the chat requests that reached the script, in arrival
// order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// InFlight is the number of chat requests being handled now.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// MaxInFlight is the highest InFlight seen so far.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// EnqueueSearch appends scripted web_search replies (see [Search]).
func (s *Server) EnqueueSearch(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.searchQueue = append(s.searchQueue, replies...)
}

// SearchRequests returns the web_search requests that reached the script.
func (s *Server) SearchRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.searchReqs...)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.mu.Lock()
	s.modelsCalls++
	body, override := s.modelsBody, s.modelsReply
	s.mu.Unlock()
	if override != nil {
		s.serve(w, r, *override, "")
		return
	}
	writeBody(w, http.StatusOK, body)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	if problem := checkChat(&req); problem != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "malformed_request", "malformed request: "+problem)
		return
	}

	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	reply, scripted := Reply{}, false
	if len(s.queue) > 0 {
		reply, scripted = s.queue[0], true
		s.queue = s.queue[1:]
	}
	respond := s.respond
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()

	if !scripted {
		if respond == nil {
			s.unscripted(w, "", n)
			return
		}
		reply = respond(req)
	}
	model, _ := req.Body["model"].(string)
	s.serve(w, r, reply, model)
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	query, _ := req.Body["query"].(string)
	query = strings.TrimSpace(query)
	if query == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "malformed_request", "malformed request: web_search: empty query")
		return
	}
	s.mu.Lock()
	s.searchReqs = append(s.searchReqs, req)
	n := len(s.searchReqs)
	reply, scripted := Reply{}, false
	if len(s.searchQueue) > 0 {
		reply, scripted = s.searchQueue[0], true
		s.searchQueue = s.searchQueue[1:]
	}
	s.mu.Unlock()
	if !scripted {
		s.unscripted(w, "search ", n)
		return
	}
	s.serve(w, r, reply, query)
}

// unscripted answers a request the test did not plan for. The message is
// also logged because clients keep error bodies out of their messages.
func (s *Server) unscripted(w http.ResponseWriter, what string, n int) {
	msg := "gatewaytest: no scripted " + what + "reply for request " + strconv.Itoa(n)
	s.t.Logf("%s (use Enqueue or Respond)", msg)
	writeError(w, http.StatusInternalServerError, "server_error", "no_scripted_reply", msg)
}

// serve writes reply, after any gate it waits behind. echo is spliced into
// bodies that echo the request (model or query).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, reply Reply, echo string) {
	for reply.gate != nil || reply.hang {
		if reply.hang {
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
			// Abort rather than return: returning would send an empty 200.
			panic(http.ErrAbortHandler)
		}
		if !reply.gate.wait(r.Context(), s.done) {
			panic(http.ErrAbortHandler)
		}
		reply = *reply.next
	}
	if reply.echoAt < 0 {
		writeBody(w, reply.status, reply.body)
		return
	}
	quoted, err := json.Marshal(echo)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(reply.body)+len(quoted)))
	w.WriteHeader(reply.status)
	_, _ = w.Write(reply.body[:reply.echoAt])
	_, _ = w.Write(quoted)
	_, _ = w.Write(reply.body[reply.echoAt:])
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found {
		token = ""
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.key)) == 1 {
		return true
	}
	writeError(w, http.StatusUnauthorized, "authentication_error", "unauthorized", "unauthorized")
	return false
}

func readRequest(w http.ResponseWriter, r *http.Request) (Request, bool) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "malformed_request", "malformed request: Content-Type must be application/json")
		return Request{}, false
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "malformed_request", "malformed request: cannot read the body")
		return Request{}, false
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil || body == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "malformed_request", "malformed request: the body must be a JSON object")
		return Request{}, false
	}
	return Request{Body: body, Raw: raw, Header: r.Header.Clone()}, true
}

func chatRole(role string) bool {
	switch role {
	case "system", "user", "assistant", "tool", "function", "developer":
		return true
	}
	return false
}

// checkChat applies the real gateway's shape rules and fills
// req.Messages; it returns what is wrong, or "".
func checkChat(req *Request) string {
	model, ok := req.Body["model"].(string)
	if !ok || strings.TrimSpace(model) == "" {
		return "model must be a non-blank string"
	}
	list, ok := req.Body["messages"].([]any)
	if !ok || len(list) == 0 {
		return "messages must be a non-empty array"
	}
	msgs := make([]map[string]any, len(list))
	for i, m := range list {
		obj, ok := m.(map[string]any)
		if !ok {
			return fmt.Sprintf("message %d is not an object", i)
		}
		role, _ := obj["role"].(string)
		if !chatRole(role) {
			return fmt.Sprintf("message %d has a missing or unknown role", i)
		}
		_, content := obj["content"]
		_, calls := obj["tool_calls"]
		_, fn := obj["function_call"]
		if !content && !calls && !fn {
			return fmt.Sprintf("message %d has neither content nor tool calls", i)
		}
		msgs[i] = obj
	}
	req.Messages = msgs
	return ""
}

func writeError(w http.ResponseWriter, status int, typ, code, message string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"message": message, "type": typ, "code": code}})
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	if len(body) > 0 && (body[0] == '{' || body[0] == '[') {
		h.Set("Content-Type", "application/json")
	} else {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
