// Package replicas_test is issue 13's acceptance: three replicas of the
// built binary, started as processes on loopback, sharing their runs
// through a real PostgreSQL, each reached by the real go-sdk client over
// streamable HTTP.
package replicas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/pgtest"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

var testPG *pgtest.Server

func TestMain(m *testing.M) {
	pgtest.Main(m, &testPG, false, bin.Remove)
}

const (
	token = "replica-token"
	// lease is short so the test waits little; the bound a dead
	// replica's run must read failed within is the 30 s.
	lease      = "1s"
	deadBound  = 30 * time.Second
	waitBound  = 30 * time.Second
	pollPeriod = 100 * time.Millisecond
)

var bin servertest.Binary

func binary(t testing.TB) string { return bin.Path(t) }

// replica is one server process.
type replica struct {
	name, url string
	cmd       *exec.Cmd
	stderr    *bytes.Buffer
	done      chan struct{}
}

// cluster is the shared configuration: one prompts directory, one gateway,
// one database; each replica differs only by its port.
type cluster struct {
	t      testing.TB
	config string // prompts.toml text with PORT for the bind port
	dir    string
}

func newCluster(t testing.TB, g *gatewaytest.Server, shared bool) *cluster {
	path := servertest.ConfigDir(t, `api_key = "`+token+`"`+"\nreply_deadline = \"300ms\"\nwatch = false\nbind = \"127.0.0.1:PORT\"", g, map[string]string{
		"speak.md": "---\nname: speak\ndescription: Say one thing through the model.\npromptforge: 1\n---\n" +
			"# Speak\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Say\n\nSay something.\n",
		"echo.md": "---\nname: echo\ndescription: Return the arguments unchanged.\npromptforge: 1\n---\n# Echo\n\n## Run\n\n```lua\nreturn args\n```\n",
	})
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(text)
	if shared {
		conf += fmt.Sprintf("\n[runs]\nstore = %q\nlease = %q\n", pgtest.Need(t, testPG), lease)
	}
	return &cluster{t: t, config: conf, dir: filepath.Dir(path)}
}

// start starts a replica on a free port and waits for /healthz to say the
// store is ok.
func (c *cluster) start(name string) *replica {
	t := c.t
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	path := filepath.Join(c.dir, name+".toml")
	if err := os.WriteFile(path, []byte(strings.Replace(c.config, "PORT", fmt.Sprint(port), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, url: fmt.Sprintf("http://127.0.0.1:%d", port), stderr: &bytes.Buffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(binary(t), "serve", "--log-level", "debug", path)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { r.stop() })
	until(t, waitBound, name+" answers /healthz as serving", func() bool {
		res, err := http.Get(r.url + "/healthz")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var body map[string]string
		return json.NewDecoder(res.Body).Decode(&body) == nil && body["status"] == "serving" &&
			(body["store"] == "ok") == strings.Contains(c.config, "[runs]")
	}, r)
	return r
}

// stop ends the replica with SIGTERM, as an orchestrator does.
func (r *replica) stop() {
	select {
	case <-r.done:
		return
	default:
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
}

// kill ends it with SIGKILL: nothing it holds is written.
func (r *replica) kill() {
	r.cmd.Process.Kill()
	<-r.done
}

// until polls cond every pollPeriod until it holds, failing after bound.
func until(t testing.TB, bound time.Duration, what string, cond func() bool, logs ...*replica) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, r := range logs {
				fmt.Fprintf(&b, "\n--- %s stderr:\n%s", r.name, r.stderr)
			}
			t.Fatalf("not within %s: %s%s", bound, what, b.String())
		}
		time.Sleep(pollPeriod)
	}
}

// client is a go-sdk session on one replica; tasks declares the Tasks
// extension, for tasks/cancel.
type client struct {
	t  testing.TB
	cs *mcp.ClientSession
}

type taskCall struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type anyResult struct {
	mcp.ResultBase
	fields map[string]any
}

func (a *anyResult) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &a.fields) }

func connect(t testing.TB, r *replica, tasks bool) *client {
	t.Helper()
	caps := &mcp.ClientCapabilities{}
	if tasks {
		caps.AddExtension("io.modelcontextprotocol/tasks", nil)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "replicas-test", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
	if err := mcp.AddSendingCustomMethod[*taskCall, *anyResult](cl, "tasks/cancel"); err != nil {
		t.Fatal(err)
	}
	cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   r.url + "/mcp",
		HTTPClient: &http.Client{Transport: servertest.Bearer{Token: token, Base: taskNamer{http.DefaultTransport}}},
	}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", r.name, err)
	}
	t.Cleanup(func() { cs.Close() })
	return &client{t: t, cs: cs}
}

// taskNamer sets the Mcp-Name header a 2026-07-28 tasks/* request must
// carry (its params.taskId), which the go-sdk client does not set for
// custom methods.
type taskNamer struct{ base http.RoundTripper }

func (n taskNamer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Method != http.MethodPost {
		return n.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	if json.Unmarshal(body, &msg) == nil && strings.HasPrefix(msg.Method, "tasks/") {
		r.Header.Set("Mcp-Name", msg.Params.TaskID)
	}
	return n.base.RoundTrip(r)
}

// record is the run record a tool answered with.
type record struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Value  string `json:"value"`
	Error  string `json:"error"`
}

func (c *client) tool(name string, args map[string]any) (record, error) {
	res, err := c.cs.CallTool(c.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return record{}, err
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return record{}, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil || rec.Status == "" {
		return record{}, fmt.Errorf("%s answered no run record: %s", name, servertest.TextOf(c.t, res))
	}
	return rec, nil
}

func (c *client) runPastDeadline() record {
	c.t.Helper()
	rec, err := c.tool("run_prompt", map[string]any{"prompt": "speak"})
	if err != nil || rec.Status != string(runs.StatusRunning) || rec.RunID == "" {
		c.t.Fatalf("run_prompt = %+v, %v; want running past the reply deadline", rec, err)
	}
	return rec
}

func (c *client) check(id string) record {
	c.t.Helper()
	rec, err := c.tool("check_run", map[string]any{"run_id": id})
	if err != nil {
		c.t.Fatalf("check_run %s: %v", id, err)
	}
	return rec
}

func TestThreeReplicasShareRuns(t *testing.T) {
	g := gatewaytest.New(t)
	// Each chat request waits at the gate of its turn.
	var (
		mu    sync.Mutex
		gates = map[int]*gatewaytest.Gate{}
		n     int
	)
	gate := func(i int) *gatewaytest.Gate {
		mu.Lock()
		defer mu.Unlock()
		if gates[i] == nil {
			gates[i] = gatewaytest.NewGate()
		}
		return gates[i]
	}
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		return gatewaytest.Gated(gate(i), gatewaytest.Text(fmt.Sprintf("said %d", i)))
	})
	t.Cleanup(func() {
		for i := 1; i <= 4; i++ {
			gate(i).Release()
		}
	})
	cl := newCluster(t, g, true)
	a, b, c := cl.start("a"), cl.start("b"), cl.start("c")
	ca, cb, cc := connect(t, a, false), connect(t, b, true), connect(t, c, false)

	// A run started on A past its reply deadline is collected on C.
	first := ca.runPastDeadline()
	<-gate(1).Arrived()
	if got := cc.check(first.RunID); got.Status != "running" {
		t.Fatalf("C reads %+v while A runs it; want running", got)
	}
	gate(1).Release()
	until(t, waitBound, "C collects the run A finished", func() bool {
		return cc.check(first.RunID).Status == "completed"
	}, a, c)
	if got := cc.check(first.RunID); got.Value != "said 1" {
		t.Fatalf("C collects %+v; want the value A's run produced", got)
	}

	// A cancel sent to B stops a run owned by A.
	second := ca.runPastDeadline()
	<-gate(2).Arrived()
	ack, err := mcp.CallCustomMethod[*taskCall, *anyResult](t.Context(), cb.cs, "tasks/cancel", &taskCall{TaskID: second.RunID})
	if err != nil || ack.fields["resultType"] != "complete" {
		t.Fatalf("tasks/cancel on B = %v, %v", ack, err)
	}
	until(t, waitBound, "the run A owns stops after B was sent its cancel", func() bool {
		return cb.check(second.RunID).Status == "failed"
	}, a, b)
	if got := cc.check(second.RunID); !strings.Contains(got.Error, runs.ErrRunCancelled.Error()) {
		t.Fatalf("the cancelled run reads %+v; want its error to say it was cancelled", got)
	}

	// B's /metrics carry the store's latency, by operation.
	req, _ := http.NewRequest(http.MethodGet, b.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, op := range []string{"lookup", "cancel", "sweep"} {
		if want := `promptforge_run_store_seconds_count{op="` + op + `"}`; !strings.Contains(string(metrics), want) {
			t.Errorf("B's /metrics lack %s", want)
		}
	}

	// A killed mid-run: its run reads failed on B within the lease bound.
	third := ca.runPastDeadline()
	<-gate(3).Arrived()
	a.kill()
	killed := time.Now()
	until(t, deadBound, "B reads the dead replica's run as failed", func() bool {
		return cb.check(third.RunID).Status == "failed"
	}, b)
	t.Logf("the dead replica's run read failed on B %v after the SIGKILL (lease %s)", time.Since(killed).Round(10*time.Millisecond), lease)
	if got := cb.check(third.RunID); got.Error != runs.MsgReplicaStopped {
		t.Fatalf("B reads %+v; want the error %q", got, runs.MsgReplicaStopped)
	}

	// Every replica restarted: every finished record still answers.
	b.stop()
	c.stop()
	a2, b2, c2 := cl.start("a2"), cl.start("b2"), cl.start("c2")
	for _, r := range []*replica{a2, b2, c2} {
		cr := connect(t, r, false)
		for _, want := range []struct {
			rec    record
			status string
		}{{first, "completed"}, {second, "failed"}, {third, "failed"}} {
			if got := cr.check(want.rec.RunID); got.Status != want.status {
				t.Fatalf("after the restart %s reads run %s as %+v; want %s", r.name, want.rec.RunID, got, want.status)
			}
		}
	}
}

// A store that is unreachable at boot fails the boot with its step, and
// never prints the password.
func TestUnreachableStoreFailsTheBoot(t *testing.T) {
	cl := newCluster(t, nil, false)
	cl.config += "\n[runs]\nstore = \"postgres://pf:hunter2@127.0.0.1:1/pf?connect_timeout=5\"\n"
	path := filepath.Join(cl.dir, "down.toml")
	if err := os.WriteFile(path, []byte(strings.Replace(cl.config, "PORT", "0", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(binary(t), "serve", path)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("serve with the store down: %v, want exit 1\n%s", err, &stderr)
	}
	if !strings.Contains(stderr.String(), "open the run store") || strings.Contains(stderr.String(), "hunter2") {
		t.Fatalf("stderr should name the step and not the password:\n%s", &stderr)
	}
}

// The store going away under a serving replica: /healthz says so with a
// 503, and check_run says the store does not answer rather than that the
// run is unknown.
func TestStoreOutageIsReported(t *testing.T) {
	cl := newCluster(t, nil, true)
	r := cl.start("a")
	c := connect(t, r, false)
	rec, err := c.tool("run_prompt", map[string]any{"prompt": "echo", "args": "x"})
	if err != nil || rec.Status != "completed" {
		t.Fatalf("run_prompt = %+v, %v", rec, err)
	}
	dsn := cl.config[strings.Index(cl.config, "postgres://"):]
	dsn = dsn[:strings.Index(dsn, `"`)]
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()
	u.Path = "/postgres"
	conn, err := pgx.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	until(t, waitBound, "/healthz reports the store unreachable", func() bool {
		res, err := http.Get(r.url + "/healthz")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode == http.StatusServiceUnavailable && string(body) == `{"status":"degraded","store":"unreachable"}`
	}, r)
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "check_run", Arguments: map[string]any{"run_id": rec.RunID}})
	if err != nil {
		t.Fatal(err)
	}
	if text := servertest.TextOf(t, res); !res.IsError || !strings.Contains(text, "the run store does not answer") {
		t.Fatalf("check_run with the store gone: %q (error %v)", text, res.IsError)
	}
}
