package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// maxControlBody bounds a control request; scripts are small.
const maxControlBody = 4 << 20

// maxGateWait bounds how long GET /control/gate holds a request, so a
// test that forgets to release a gate fails with an answer instead of
// hanging its HTTP client.
const maxGateWait = 60 * time.Second

// A replySpec is one scripted answer in JSON. Exactly one of text, empty,
// calls, status, malformed, hang, gate, echo or sleep is set:
//
//	{"text": "hi"}                           text, finish_reason "stop" (or "finish")
//	{"empty": "stop"}                        empty content with that finish_reason
//	{"calls": [{"name": "add", "args": {}}]} tool calls
//	{"status": 503, "body": "down"}          an HTTP status and raw body
//	{"malformed": "{not json"}               200 with this raw body
//	{"hang": true}                           never answers
//	{"gate": "g1", "then": {...}}            held at gate g1 until released
//	{"echo": "prefix: "}                     the last user message, prefixed
//	                                         (default replies only: it needs the request)
//	{"sleep": true, "then": {...}}           held for as many seconds as the first number
//	                                         in the last user message (0.5, 2, ...), then
//	                                         answered with then; dropped if the client goes
//	                                         (default replies only: it needs the request)
//
// "reasoning" adds reasoning_content to a text, empty or calls reply, and
// "usage": {"prompt": n, "completion": n} the usage object a server reports.
type replySpec struct {
	Text      *string    `json:"text,omitempty"`
	Finish    string     `json:"finish,omitempty"`
	Empty     *string    `json:"empty,omitempty"`
	Calls     []callSpec `json:"calls,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	Status    int        `json:"status,omitempty"`
	Body      string     `json:"body,omitempty"`
	Malformed *string    `json:"malformed,omitempty"`
	Hang      bool       `json:"hang,omitempty"`
	Gate      string     `json:"gate,omitempty"`
	Then      *replySpec `json:"then,omitempty"`
	Echo      *string    `json:"echo,omitempty"`
	Sleep     bool       `json:"sleep,omitempty"`
	Usage     *usageSpec `json:"usage,omitempty"`
}

type usageSpec struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
}

type callSpec struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// script is the -script file: the gateway's state before the first
// request. Every key is optional.
type script struct {
	// Models replaces the /v1/models entries (absent keeps the default
	// test-model).
	Models []map[string]any `json:"models,omitempty"`
	// Replies are queued in order, one per chat request.
	Replies []replySpec `json:"replies,omitempty"`
	// Respond answers chat requests once the queue is empty.
	Respond *replySpec `json:"respond,omitempty"`
}

// control scripts one gateway over HTTP and names its gates, so a test in
// another process can hold a model call in flight and release it later.
type control struct {
	gw *gatewaytest.Server
	// stopping is closed by stop, ending gate long-polls so a shutdown
	// does not wait them out.
	stopping chan struct{}
	stopOnce sync.Once

	mu    sync.Mutex
	gates map[string]*gatewaytest.Gate
}

func newControl(gw *gatewaytest.Server) *control {
	return &control{gw: gw, stopping: make(chan struct{}), gates: make(map[string]*gatewaytest.Gate)}
}

// stop ends every gate long-poll now and makes later ones answer at once.
func (c *control) stop() { c.stopOnce.Do(func() { close(c.stopping) }) }

// gate returns the gate with this name, creating it closed on first use:
// a reply may name a gate before the test asks about it, and the other way
// round.
func (c *control) gate(name string) *gatewaytest.Gate {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.gates[name]
	if !ok {
		g = gatewaytest.NewGate()
		c.gates[name] = g
	}
	return g
}

// apply installs a script.
func (c *control) apply(s script) error {
	if s.Models != nil {
		c.gw.SetModels(s.Models...)
	}
	if err := c.enqueue(s.Replies); err != nil {
		return err
	}
	if s.Respond != nil {
		return c.respond(s.Respond)
	}
	return nil
}

// enqueue builds every reply before queueing any, so a bad script queues
// nothing.
func (c *control) enqueue(specs []replySpec) error {
	replies := make([]gatewaytest.Reply, len(specs))
	for i := range specs {
		r, err := c.build(&specs[i], nil)
		if err != nil {
			return fmt.Errorf("reply %d: %w", i, err)
		}
		replies[i] = r
	}
	c.gw.Enqueue(replies...)
	return nil
}

// respond makes spec the answer to chat requests the queue does not
// cover; nil restores the default (500, "no scripted reply").
func (c *control) respond(spec *replySpec) error {
	if spec == nil {
		c.gw.Respond(nil)
		return nil
	}
	// Build once against an empty request so a bad spec fails here, where
	// the test sees it, and not on some later model call.
	if _, err := c.build(spec, &gatewaytest.Request{}); err != nil {
		return fmt.Errorf("default reply: %w", err)
	}
	c.gw.Respond(func(req gatewaytest.Request) gatewaytest.Reply {
		r, err := c.build(spec, &req)
		if err != nil {
			return gatewaytest.Status(http.StatusInternalServerError, "gatewaytest: "+err.Error())
		}
		return r
	})
	return nil
}

// build turns a spec into a Reply. req is the request being answered, nil
// when the reply is queued ahead of it.
func (c *control) build(s *replySpec, req *gatewaytest.Request) (gatewaytest.Reply, error) {
	kinds := 0
	for _, set := range []bool{s.Text != nil, s.Empty != nil, s.Calls != nil, s.Status != 0, s.Malformed != nil, s.Hang, s.Gate != "", s.Echo != nil, s.Sleep} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return gatewaytest.Reply{}, errors.New(`a reply sets exactly one of "text", "empty", "calls", "status", "malformed", "hang", "gate", "echo", "sleep"`)
	}
	var r gatewaytest.Reply
	switch {
	case s.Text != nil:
		finish := s.Finish
		if finish == "" {
			finish = "stop"
		}
		r = gatewaytest.TextFinish(*s.Text, finish)
	case s.Empty != nil:
		r = gatewaytest.Empty(*s.Empty)
	case s.Calls != nil:
		calls := make([]gatewaytest.Call, len(s.Calls))
		for i, cs := range s.Calls {
			if cs.Name == "" {
				return gatewaytest.Reply{}, fmt.Errorf("call %d has no name", i)
			}
			calls[i] = gatewaytest.Call{ID: cs.ID, Name: cs.Name}
			if cs.Args != nil {
				calls[i].Args = cs.Args
			}
		}
		r = gatewaytest.Calls(calls...)
	case s.Status != 0:
		if s.Status < 100 || s.Status > 599 {
			return gatewaytest.Reply{}, fmt.Errorf("status %d is not an HTTP status", s.Status)
		}
		r = gatewaytest.Status(s.Status, s.Body)
	case s.Malformed != nil:
		r = gatewaytest.Malformed(*s.Malformed)
	case s.Hang:
		r = gatewaytest.Hang()
	case s.Gate != "":
		if s.Then == nil {
			return gatewaytest.Reply{}, fmt.Errorf(`gate %q needs "then": the reply sent once it opens`, s.Gate)
		}
		then, err := c.build(s.Then, req)
		if err != nil {
			return gatewaytest.Reply{}, fmt.Errorf("gate %q: %w", s.Gate, err)
		}
		r = gatewaytest.Gated(c.gate(s.Gate), then)
	case s.Echo != nil:
		if req == nil {
			return gatewaytest.Reply{}, errors.New(`"echo" needs the request, so it only works as the default reply (POST /control/respond)`)
		}
		r = gatewaytest.Text(*s.Echo + lastUserText(req.Messages))
	case s.Sleep:
		if req == nil {
			return gatewaytest.Reply{}, errors.New(`"sleep" needs the request, so it only works as the default reply (POST /control/respond)`)
		}
		if s.Then == nil {
			return gatewaytest.Reply{}, errors.New(`"sleep" needs "then": the reply sent once the time is up`)
		}
		then, err := c.build(s.Then, req)
		if err != nil {
			return gatewaytest.Reply{}, fmt.Errorf("sleep: %w", err)
		}
		if req.Messages == nil {
			// The check respond makes against an empty request.
			return then, nil
		}
		text := lastUserText(req.Messages)
		secs, err := strconv.ParseFloat(firstNumber.FindString(text), 64)
		if err != nil || secs < 0 || secs > maxSleep.Seconds() {
			return gatewaytest.Reply{}, fmt.Errorf(`"sleep" needs a number of seconds (0 to %v) in the last user message, got %q`, maxSleep.Seconds(), text)
		}
		// A gate of this request's own, opened when its time is up: the
		// server's request loop already drops a gated request whose client
		// goes away, and the timer only closes a channel.
		g := gatewaytest.NewGate()
		time.AfterFunc(time.Duration(secs*float64(time.Second)), g.Release)
		r = gatewaytest.Gated(g, then)
	}
	if s.Reasoning != "" {
		r = r.WithReasoning(s.Reasoning)
	}
	if s.Usage != nil {
		if s.Usage.Prompt < 0 || s.Usage.Completion < 0 {
			return gatewaytest.Reply{}, errors.New(`"usage" counts cannot be negative`)
		}
		r = r.WithUsage(s.Usage.Prompt, s.Usage.Completion)
	}
	return r, nil
}

// firstNumber finds the seconds a "sleep" reply waits.
var firstNumber = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// maxSleep bounds a "sleep" reply, like maxGateWait bounds a gate poll.
const maxSleep = 10 * time.Minute

// lastUserText is the content of the last user message, "" if there is
// none or it is not a plain string.
func lastUserText(msgs []map[string]any) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["role"] == "user" {
			s, _ := msgs[i]["content"].(string)
			return s
		}
	}
	return ""
}

// handler serves the control API:
//
//	POST /control/enqueue        [reply, ...]           queue replies
//	POST /control/respond        reply | null           the default reply
//	POST /control/models         [model entry, ...]     replace /v1/models
//	POST /control/gate/release   {"gate": "g1"}         open a gate for good
//	GET  /control/gate?name=g1&arrived=N&wait=10s       wait until N requests reached it
//	GET  /control/requests                              what the gateway received
func (c *control) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control/enqueue", func(w http.ResponseWriter, r *http.Request) {
		var specs []replySpec
		if !decode(w, r, &specs) {
			return
		}
		if err := c.enqueue(specs); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		reply(w, map[string]int{"queued": len(specs)})
	})
	mux.HandleFunc("POST /control/respond", func(w http.ResponseWriter, r *http.Request) {
		var spec *replySpec
		if !decode(w, r, &spec) {
			return
		}
		if err := c.respond(spec); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		reply(w, map[string]bool{"ok": true})
	})
	mux.HandleFunc("POST /control/models", func(w http.ResponseWriter, r *http.Request) {
		var entries []map[string]any
		if !decode(w, r, &entries) {
			return
		}
		c.gw.SetModels(entries...)
		reply(w, map[string]int{"models": len(entries)})
	})
	mux.HandleFunc("POST /control/gate/release", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Gate string `json:"gate"`
		}
		if !decode(w, r, &body) {
			return
		}
		if body.Gate == "" {
			fail(w, http.StatusBadRequest, errors.New(`"gate" names the gate to release`))
			return
		}
		c.gate(body.Gate).Release()
		reply(w, map[string]bool{"released": true})
	})
	mux.HandleFunc("GET /control/gate", c.serveGate)
	mux.HandleFunc("GET /control/requests", func(w http.ResponseWriter, _ *http.Request) {
		reqs := c.gw.Requests()
		bodies := make([]json.RawMessage, len(reqs))
		for i, rq := range reqs {
			bodies[i] = rq.Raw
		}
		reply(w, map[string]any{
			"requests":      bodies,
			"in_flight":     c.gw.InFlight(),
			"max_in_flight": c.gw.MaxInFlight(),
			"models_calls":  c.gw.ModelsCalls(),
		})
	})
	return mux
}

// serveGate reports a gate, first waiting (up to wait) until arrived
// requests in total have reached it. Long-polling here keeps the test
// side free of sleep loops.
func (c *control) serveGate(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("name")
	if name == "" {
		fail(w, http.StatusBadRequest, errors.New("name= names the gate"))
		return
	}
	arrived := 0
	if v := q.Get("arrived"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(w, http.StatusBadRequest, fmt.Errorf("arrived=%q is not a count", v))
			return
		}
		arrived = n
	}
	wait := time.Duration(0)
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			fail(w, http.StatusBadRequest, fmt.Errorf("wait=%q is not a duration", v))
			return
		}
		wait = min(d, maxGateWait)
	}
	g := c.gate(name)
	reached := true
	if arrived > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-g.ArrivedN(arrived):
		case <-timer.C:
			reached = false
		case <-c.stopping:
			reached = false
		case <-r.Context().Done():
			return
		}
	}
	reply(w, map[string]any{"name": name, "arrived": reached, "waiting": g.Waiting()})
}

// decode reads a JSON body into v, refusing unknown keys so a misspelt
// field fails the test that sent it.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("decode the control request: %w", err))
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		fail(w, http.StatusBadRequest, errors.New("decode the control request: one JSON value expected"))
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

func fail(w http.ResponseWriter, status int, err error) {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
