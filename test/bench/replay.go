package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// replayEras answers "is the stateless (2026-07-28) path at least as fast
// as the stateful one?" for our server alone. The http and http-stateless
// lines cannot: the go-sdk client they drive does more work for a
// stateless call than for a stateful one (1.30x its instructions,
// docs/benchmarks.md, "Why the go-sdk client's stateless calls are slower
// than its stateful ones"), and on two cores its CPU comes out of the
// server's, so those lines compare the client's two modes as much as ours.
//
// Here the calls of each era are the bytes the go-sdk client itself sends
// in that era (its headers and body, captured from a real session's
// tools/call, the JSON-RPC id renumbered for each call), posted by one
// plain net/http client whose own work is the same in both eras, to one
// server process, the eras measured in interleaved rounds. Each caller has
// its own captured session, as each of the go-sdk lines' callers does.
func replayEras(ctx context.Context, o options, prompts string, clients int) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	cfg, err := writeConfig(o.dir, "replay-"+port, prompts, port, 0, "")
	if err != nil {
		return err
	}
	pf := filepath.Join(o.dir, "promptforge-mcp-server")
	env := profileEnv(o, fmt.Sprintf("http-replayed-%d-promptforge", clients), 2*o.duration+time.Second)
	_, stop, pid, err := startHTTP([]string{pf, "serve", cfg}, port, "2025-11-25", env)
	if err != nil {
		return fmt.Errorf("start our server: %w", err)
	}
	defer stop()
	pids := func() []int { return []int{pid} }

	var targets []target
	for _, era := range []struct{ name, version string }{
		{"run_prompt, stateful", "2025-11-25"},
		{"run_prompt, stateless", "2026-07-28"},
	} {
		tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		replays := make([]*replay, clients)
		for c := range replays {
			rec := &recorder{base: bearer{tr}}
			cs, err := connectHTTP(ctx, port, era.version, rec)
			if err != nil {
				return fmt.Errorf("%s: connect a go-sdk session: %w", era.name, err)
			}
			// Open to the end: the stateful session's id is in its
			// captured header.
			defer cs.Close()
			if res, err := cs.CallTool(ctx, echoCall()); err != nil || res.IsError {
				return fmt.Errorf("%s: the call to capture: %v %v", era.name, err, res)
			}
			if replays[c], err = rec.replay(client, "http://127.0.0.1:"+port+"/mcp"); err != nil {
				return fmt.Errorf("%s: %w", era.name, err)
			}
		}
		targets = append(targets, target{
			name:    era.name,
			callers: func(c int) caller { return replays[c].call },
			pids:    pids,
		})
	}
	results, err := measure(ctx, o, targets, "http", clients)
	if err != nil {
		return err
	}
	stateful := &results[0]
	for i, t := range targets {
		s := &results[i]
		ratio := ""
		if i > 0 {
			ratio = fmt.Sprintf("%.2fx the stateful calls/s (p50 %.2fx, server cpu %.2fx)", s.rate()/stateful.rate(), float64(s.pct(0.5))/float64(stateful.pct(0.5)), float64(s.cpuPerCall())/float64(stateful.cpuPerCall()))
		}
		fmt.Printf("%-17s %-8d %-27s %9.0f %9s %9s %9s %9s   %s\n", "http replayed", clients, "promptforge "+t.name, s.rate(), us(s.pct(0.5)), us(s.pct(0.9)), us(s.pct(0.99)), us(s.cpuPerCall()), ratio)
	}
	return nil
}

// recorder is a go-sdk client's transport that keeps the headers and
// body of the first tools/call it sends.
type recorder struct {
	base   http.RoundTripper
	mu     sync.Mutex
	header http.Header
	body   []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil {
		return r.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	var env struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &env) == nil && env.Method == "tools/call" {
		r.mu.Lock()
		if r.body == nil {
			r.header, r.body = req.Header.Clone(), body
		}
		r.mu.Unlock()
	}
	return r.base.RoundTrip(req)
}

// replay posts the recorded call again and again, each time with an id of
// its own.
type replay struct {
	client    *http.Client
	url       string
	header    http.Header
	pre, post []byte // the body before and after the id's digits
	id        int64
}

// replay returns the poster of r's recorded call to url through client.
func (r *recorder) replay(client *http.Client, url string) (*replay, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.body == nil {
		return nil, fmt.Errorf("the go-sdk client sent no tools/call to record")
	}
	// The envelope's id is the first "id": the go-sdk writes (jsonrpc,
	// id, method, params); the decode below checks that it is.
	at := bytes.Index(r.body, []byte(`"id":`))
	if at < 0 {
		return nil, fmt.Errorf("no id in the recorded call %s", r.body)
	}
	from := at + len(`"id":`)
	to := from
	for to < len(r.body) && r.body[to] >= '0' && r.body[to] <= '9' {
		to++
	}
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || string(env.ID) != string(r.body[from:to]) {
		return nil, fmt.Errorf("cannot find the envelope's numeric id in the recorded call %s", r.body)
	}
	h := r.header.Clone()
	h.Set("Authorization", "Bearer "+token)
	return &replay{client: client, url: url, header: h, pre: r.body[:from], post: r.body[to:], id: 1000}, nil
}

// call posts the call once and checks that its reply is a result that is
// not a tool error.
func (p *replay) call(ctx context.Context) error {
	p.id++
	body := make([]byte, 0, len(p.pre)+len(p.post)+20)
	body = strconv.AppendInt(append(body, p.pre...), p.id, 10)
	body = append(body, p.post...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = p.header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	reply, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(reply, []byte(`"result":`)) || bytes.Contains(reply, []byte(`"isError":true`)) {
		return fmt.Errorf("the replayed call was answered %s: %s", resp.Status, reply)
	}
	return nil
}
