package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/runs"
)

// The Tasks extension (mcp-server §4.12) through the real go-sdk client.
// The SDK's client decodes a tools/call reply into a CallToolResult, which
// has no taskId, so the client's transport is wrapped to read the reply as
// it arrived on the wire; the tasks/* methods are sent as the SDK's custom
// methods.

// tasksClient is a client session with the raw replies it has read.
type tasksClient struct {
	t  testing.TB
	cs *mcp.ClientSession
	mu sync.Mutex
	// last is the result of the last response read.
	last json.RawMessage
}

// wireObject is any result, kept as the generic object it was on the wire.
type wireObject struct {
	mcp.ResultBase
	fields map[string]any
}

func (w *wireObject) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &w.fields) }

// tasksCall is the params of tasks/get, tasks/update and tasks/cancel as a
// client sends them.
type tasksCall struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses map[string]any `json:"inputResponses,omitempty"`
}

// recording is a client transport that keeps the last result it read.
type recording struct {
	mcp.Transport
	c *tasksClient
}

func (r recording) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := r.Transport.Connect(ctx)
	return recordingConn{conn, r.c}, err
}

type recordingConn struct {
	mcp.Connection
	c *tasksClient
}

func (r recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := r.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Result != nil {
		r.c.mu.Lock()
		r.c.last = append(json.RawMessage(nil), resp.Result...)
		r.c.mu.Unlock()
	}
	return msg, err
}

// connectTasks opens a client session on h's server; declare adds the
// Tasks extension to the client's capabilities, and version picks the
// protocol era ("" for the newest).
func connectTasks(t testing.TB, h *harness, declare bool, version string) *tasksClient {
	t.Helper()
	caps := &mcp.ClientCapabilities{}
	if declare {
		caps.AddExtension(tasksExtension, nil)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "tasks-client", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
	for _, m := range []string{methodTasksGet, methodTasksUpdate, methodTasksCancel, "tasks/result", "tasks/list"} {
		if err := mcp.AddSendingCustomMethod[*tasksCall, *wireObject](client, m); err != nil {
			t.Fatal(err)
		}
	}
	c := &tasksClient{t: t}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.cs, err = client.Connect(context.Background(), recording{ct, c}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cs.Close()
		ss.Wait()
	})
	return c
}

// run calls run_prompt and returns its reply as it was on the wire; meta,
// when given, is the request's _meta.
func (c *tasksClient) run(prompt string, meta mcp.Meta) map[string]any {
	c.t.Helper()
	return c.call(ToolRunPrompt, map[string]any{"prompt": prompt}, meta)
}

// call calls the tool name with args and returns its reply as it was on
// the wire; meta, when given, is the request's _meta.
func (c *tasksClient) call(name string, args map[string]any, meta mcp.Meta) map[string]any {
	c.t.Helper()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	params.Meta = meta
	if _, err := c.cs.CallTool(context.Background(), params); err != nil {
		c.t.Fatalf("%s %v: %v", name, args, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(c.last, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// method sends a tasks/* method for id.
func (c *tasksClient) method(method, id string) (map[string]any, error) {
	res, err := mcp.CallCustomMethod[*tasksCall, *wireObject](context.Background(), c.cs, method, &tasksCall{TaskID: id})
	if err != nil {
		return nil, err
	}
	return res.fields, nil
}

func (c *tasksClient) ok(method, id string) map[string]any {
	c.t.Helper()
	m, err := c.method(method, id)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, id, err)
	}
	return m
}

func (c *tasksClient) refused(method, id string, code int64) *jsonrpc.Error {
	c.t.Helper()
	m, err := c.method(method, id)
	if err == nil {
		c.t.Fatalf("%s %s answered %v, want error %d", method, id, m, code)
	}
	we := wireError(c.t, err)
	if we.Code != code {
		c.t.Fatalf("%s %s: code %d (%s), want %d", method, id, we.Code, we.Message, code)
	}
	return we
}

// checkTaskFields checks the Task fields every task carries.
func checkTaskFields(t *testing.T, what string, m map[string]any, id, status string) {
	t.Helper()
	if m["taskId"] != id || m["status"] != status {
		t.Errorf("%s: taskId %v status %v, want %s %s", what, m["taskId"], m["status"], id, status)
	}
	for _, k := range []string{"createdAt", "lastUpdatedAt"} {
		if s, _ := m[k].(string); len(s) < 19 {
			t.Errorf("%s: %s = %v, want an ISO 8601 timestamp", what, k, m[k])
		} else if _, err := time.Parse(time.RFC3339, s); err != nil {
			t.Errorf("%s: %s = %v: %v", what, k, s, err)
		}
	}
	if ttl, _ := m["ttlMs"].(float64); ttl < float64(time.Hour.Milliseconds()) {
		t.Errorf("%s: ttlMs %v, want at least the 1h retention", what, m["ttlMs"])
	}
	if m["pollIntervalMs"] != float64(taskPollInterval.Milliseconds()) {
		t.Errorf("%s: pollIntervalMs %v", what, m["pollIntervalMs"])
	}
	for _, k := range []string{"ttl", "pollInterval", "task", "requestState", "inputRequests"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s carries %q: %v", what, k, m)
		}
	}
}

func TestANegotiatedRunThatOutlivesItsDeadlineIsATaskCollectedByTasksGetOrCheckRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakingHarness(t, g, deadlineLimits(50*time.Millisecond))
		c := connectTasks(t, h, true, "")

		start := time.Now()
		created := c.run("speak", nil)
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Errorf("the task came after %v, want the 50ms deadline", waited)
		}
		id, _ := created["taskId"].(string)
		if created["resultType"] != "task" || id == "" {
			t.Fatalf("CreateTaskResult %v", created)
		}
		checkTaskFields(t, "CreateTaskResult", created, id, "working")
		for _, k := range []string{"content", "structuredContent", "result", "error", "isError"} {
			if _, ok := created[k]; ok {
				t.Errorf("CreateTaskResult carries %q: %v", k, created)
			}
		}
		// The task id is the run id: one record in the registry.
		if rec, ok := h.srv.Registry().Check(id); !ok || rec.Status != runs.StatusRunning {
			t.Fatalf("the registry's record of %s: %+v %v", id, rec, ok)
		}

		got := c.ok(methodTasksGet, id)
		checkTaskFields(t, "tasks/get while working", got, id, "working")
		if got["resultType"] != "complete" || got["result"] != nil || got["error"] != nil {
			t.Fatalf("tasks/get while working %v", got)
		}
		polled := h.ok(ToolCheckRun, map[string]any{"run_id": id})
		if structuredOf(t, polled)["status"] != "running" {
			t.Fatalf("check_run on the task %v", structuredOf(t, polled))
		}

		g.Release()
		synctest.Wait()
		got = c.ok(methodTasksGet, id)
		checkTaskFields(t, "tasks/get once completed", got, id, "completed")
		result, _ := got["result"].(map[string]any)
		content, _ := result["content"].([]any)
		if len(content) != 1 || content[0].(map[string]any)["text"] != "eventually" || result["isError"] != nil {
			t.Fatalf("inlined result %v", got["result"])
		}
		if s, _ := result["structuredContent"].(map[string]any); s["status"] != "completed" || s["run_id"] != id {
			t.Fatalf("inlined structuredContent %v", result["structuredContent"])
		}
		if _, ok := got["error"]; ok {
			t.Fatalf("a completed task carries an error: %v", got)
		}
		if done := structuredOf(t, h.ok(ToolCheckRun, map[string]any{"run_id": id})); done["status"] != "completed" || done["value"] != "eventually" {
			t.Fatalf("check_run after completion %v", done)
		}
	})
}

func TestAFailedRunIsACompletedTaskWhoseResultIsTheError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		fails := promptFile("speakfail", "Speak, then fail.", "",
			"# Speak\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Say\n\nSay something.\n\n## Fail\n\n```lua\nerror(\"the second section broke\")\n```\n")
		h := newHarness(t, fixture{
			prompts: map[string]string{"speakfail.md": fails},
			limits:  deadlineLimits(50 * time.Millisecond),
			opts:    withGateway(g.client),
		})
		c := connectTasks(t, h, true, "")
		id, _ := c.run("speakfail", nil)["taskId"].(string)
		if id == "" {
			t.Fatal("no task")
		}
		g.Release()
		synctest.Wait()

		// The extension files a tool's isError result under completed;
		// failed is for JSON-RPC errors, which a run's failure is not.
		got := c.ok(methodTasksGet, id)
		checkTaskFields(t, "tasks/get of a failed run", got, id, "completed")
		result, _ := got["result"].(map[string]any)
		content, _ := result["content"].([]any)
		if result["isError"] != true || len(content) != 1 || !strings.Contains(content[0].(map[string]any)["text"].(string), "the second section broke") {
			t.Fatalf("inlined result %v", got["result"])
		}
		if msg, _ := got["statusMessage"].(string); !strings.Contains(msg, "the second section broke") {
			t.Fatalf("statusMessage %q", msg)
		}
	})
}

func TestTasksCancelStopsTheRunFreesItsSlotAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		limits := deadlineLimits(50 * time.Millisecond)
		limits.MaxConcurrentRuns = 1
		limits.AdmissionTimeout = 50 * time.Second
		h := speakingHarness(t, g, limits)
		c := connectTasks(t, h, true, "")
		id, _ := c.run("speak", nil)["taskId"].(string)
		if id == "" {
			t.Fatal("no task")
		}

		for range 2 {
			ack := c.ok(methodTasksCancel, id)
			// {resultType: complete}, and the _meta (serverInfo) the SDK
			// adds in the 2026-07-28 era; nothing of the task.
			for k := range ack {
				if k != "resultType" && k != "_meta" {
					t.Fatalf("cancel ack carries %q: %v", k, ack)
				}
			}
			if ack["resultType"] != "complete" {
				t.Fatalf("cancel ack %v", ack)
			}
			synctest.Wait()
		}
		got := c.ok(methodTasksGet, id)
		checkTaskFields(t, "tasks/get after cancel", got, id, "cancelled")
		if _, ok := got["result"]; ok {
			t.Fatalf("a cancelled task carries a result: %v", got)
		}
		// The run stopped and gave its one slot back: admission is granted
		// at once rather than refused after 50s.
		start := time.Now()
		slot, err := h.srv.Registry().Admit(context.Background())
		if err != nil || time.Since(start) != 0 {
			t.Fatalf("the cancelled run kept its slot: %v after %v", err, time.Since(start))
		}
		slot.Release()
		if rec, _ := h.srv.Registry().Check(id); rec.Status != runs.StatusFailed || !strings.Contains(rec.Error, runs.ErrRunCancelled.Error()) {
			t.Fatalf("check_run's record %+v, want failed saying it was cancelled", rec)
		}
		// A cancel of the finished task is the same ack.
		if ack := c.ok(methodTasksCancel, id); ack["resultType"] != "complete" || ack["status"] != nil {
			t.Fatalf("cancel of a finished task %v", ack)
		}
	})
}

func TestUnknownTasksAreInvalidParamsAndRemovedMethodsAreNotFound(t *testing.T) {
	h := newHarness(t, fixture{})
	c := connectTasks(t, h, true, "")
	for _, m := range []string{methodTasksGet, methodTasksUpdate, methodTasksCancel} {
		we := c.refused(m, "no-such-task", jsonrpc.CodeInvalidParams)
		if !strings.Contains(we.Message, "no-such-task") || !strings.Contains(we.Message, "1h") {
			t.Errorf("%s: %q does not name the task and the retention", m, we.Message)
		}
	}
	for _, m := range []string{"tasks/result", "tasks/list"} {
		c.refused(m, "no-such-task", jsonrpc.CodeMethodNotFound)
	}
}

func TestTasksUpdateAcknowledgesATaskThatNeedsNoInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakingHarness(t, g, deadlineLimits(50*time.Millisecond))
		c := connectTasks(t, h, true, "")
		id, _ := c.run("speak", nil)["taskId"].(string)
		res, err := mcp.CallCustomMethod[*tasksCall, *wireObject](context.Background(), c.cs, methodTasksUpdate,
			&tasksCall{TaskID: id, InputResponses: map[string]any{"unknown-key": map[string]any{"ignored": true}}})
		if err != nil || res.fields["resultType"] != "complete" || res.fields["status"] != nil {
			t.Fatalf("tasks/update %v %v", res, err)
		}
		if got := c.ok(methodTasksGet, id); got["status"] != "working" {
			t.Fatalf("the update changed the task: %v", got)
		}
		g.Release()
		synctest.Wait()
	})
}

func TestWithoutTheExtensionCallsStaySynchronousAndTasksMethodsAreRefused(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("era "+version, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newMemGateway(t)
				h := speakingHarness(t, g, deadlineLimits(50*time.Millisecond))
				c := connectTasks(t, h, false, version)
				got := c.run("speak", nil)
				s, _ := got["structuredContent"].(map[string]any)
				if got["resultType"] == "task" || got["taskId"] != nil || s["status"] != "running" {
					t.Fatalf("reply %v, want the running record", got)
				}
				content, _ := got["content"].([]any)
				if len(content) != 1 || !strings.Contains(content[0].(map[string]any)["text"].(string), "check_run") {
					t.Fatalf("the running text %v", content)
				}
				id := s["run_id"].(string)
				for _, m := range []string{methodTasksGet, methodTasksUpdate, methodTasksCancel} {
					we := c.refused(m, id, mcp.CodeMissingRequiredClientCapabilities)
					var data struct {
						RequiredCapabilities struct {
							Extensions map[string]any `json:"extensions"`
						} `json:"requiredCapabilities"`
					}
					if err := json.Unmarshal(we.Data, &data); err != nil || data.RequiredCapabilities.Extensions[tasksExtension] == nil {
						t.Errorf("%s: data %s does not name the extension", m, we.Data)
					}
					if !strings.Contains(we.Message, "check_run") {
						t.Errorf("%s: %q does not say what works without it", m, we.Message)
					}
				}
				// The refused cancel did not reach the run.
				if rec, _ := h.srv.Registry().Check(id); rec.Status != runs.StatusRunning {
					t.Fatalf("record %+v", rec)
				}
				g.Release()
				synctest.Wait()
			})
		})
	}
}

func TestTheSessionOrOneRequestCanDeclareTheExtension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakingHarness(t, g, deadlineLimits(50*time.Millisecond))

		// 2025-11-25: declared at initialize, which advertises the extension.
		session := connectTasks(t, h, true, "2025-11-25")
		caps, _ := json.Marshal(session.cs.InitializeResult().Capabilities.Extensions)
		if string(caps) != `{"io.modelcontextprotocol/tasks":{}}` {
			t.Fatalf("initialize advertises extensions %s", caps)
		}
		if got := session.run("speak", nil); got["resultType"] != "task" {
			t.Fatalf("a session that declared the extension got %v", got)
		}

		// A session that did not declare it, opting in for one request.
		plain := connectTasks(t, h, false, "2025-11-25")
		optIn := mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}
		got := plain.run("speak", optIn)
		if got["resultType"] != "task" {
			t.Fatalf("a per-request opt-in got %v", got)
		}
		// ... and that request alone: the next call without it is synchronous.
		if next := plain.run("speak", nil); next["resultType"] == "task" {
			t.Fatalf("the opt-in outlived its request: %v", next)
		}
		// Its task is readable by a client that declares the extension.
		if read := session.ok(methodTasksGet, got["taskId"].(string)); read["status"] != "working" {
			t.Fatalf("tasks/get %v", read)
		}
		g.Release()
		synctest.Wait()
	})
}

func TestARunFinishedInsideItsDeadlineIsAnsweredDirectlyEvenWithTheExtension(t *testing.T) {
	h := newHarness(t, fixture{})
	c := connectTasks(t, h, true, "")
	got := c.run("echo", nil)
	if got["resultType"] == "task" || got["taskId"] != nil {
		t.Fatalf("a fast run became a task: %v", got)
	}
	if s, _ := got["structuredContent"].(map[string]any); s["status"] != "completed" {
		t.Fatalf("reply %v", got)
	}
}

func TestAnAbnormalEndIsAFailedTaskWithAJSONRPCError(t *testing.T) {
	h := newHarness(t, fixture{})
	start := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	v := runs.View{
		Result:   runs.Failed("r1", "p", "the run did not finish: boom", 0, time.Second),
		Started:  start,
		Finished: start.Add(time.Second),
		Abnormal: true,
	}
	got := h.srv.taskOf(v, start.Add(time.Minute))
	want := task{
		TaskID: "r1", Status: taskFailed, StatusMessage: "the run did not finish: boom",
		CreatedAt: "2026-07-28T10:00:00.000Z", LastUpdatedAt: "2026-07-28T10:00:01.000Z",
		TTLMs: (time.Second + time.Hour).Milliseconds(), PollIntervalMs: 1000,
	}
	if got != want {
		t.Fatalf("taskOf = %+v\nwant %+v", got, want)
	}
}

func TestRequireTasksRefusesACallerWithoutTheExtension(t *testing.T) {
	declared := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "job"}}
	declared.Params.Meta = mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}
	if err := requireTasks(declared); err != nil {
		t.Fatalf("a caller that declared the extension was refused: %v", err)
	}
	plain := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "job"}}
	plain.Params.Meta = mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{}}
	we := wireError(t, requireTasks(plain))
	if we.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(we.Message, "answers only with a task") || !strings.Contains(string(we.Data), tasksExtension) {
		t.Fatalf("refusal %d %q %s", we.Code, we.Message, we.Data)
	}
}

// Any tool that launches a run answers through answerRun; its task inlines
// that tool's own rendering, not run_prompt's.
func TestATaskInlinesTheRenderingOfTheToolThatLaunchedIt(t *testing.T) {
	h := newHarness(t, fixture{})
	reg := h.srv.Registry()
	slot, err := reg.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	handle, err := reg.Launch(slot, runs.NewRunID(), "job", func(context.Context) runs.Outcome {
		<-release
		return runs.Outcome{Value: "done"}
	})
	if err != nil {
		t.Fatal(err)
	}
	render := func(r runs.Result) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "job says " + string(r.Status) + " " + r.Value}}}, nil
	}
	caps := mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "job"}}
	req.Params.Meta = caps
	slotted := &taskSlot{}
	ctx := context.WithValue(context.Background(), taskSlotKey{}, slotted)

	placeholder, err := h.srv.answerRun(ctx, req, runs.Running(handle.RunID(), "job", 0), render)
	if err != nil || slotted.task == nil || slotted.task.TaskID != handle.RunID() {
		t.Fatalf("no task filed: %v %+v", err, slotted.task)
	}
	if textOf(t, placeholder) != "job says running " {
		t.Fatalf("placeholder %q", textOf(t, placeholder))
	}
	close(release)
	<-handle.Done()
	got, err := h.srv.tasksGet(context.Background(), nil, &taskParams{ParamsBase: mcp.ParamsBase{Meta: caps}, TaskID: handle.RunID()})
	if err != nil {
		t.Fatal(err)
	}
	if r := got.(*getTaskResult); r.Status != taskCompleted || textOf(t, r.Result) != "job says completed done" {
		t.Fatalf("tasks/get %+v", r)
	}
}

// A prompt published as its own tool ([catalog].tools) answers a long run
// with a task too: every tool that launches runs answers through answerRun.
func TestAPromptToolsLongRunIsATask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakToolHarness(t, g)
		c := connectTasks(t, h, true, "")
		created := c.call("speak", nil, nil)
		id, _ := created["taskId"].(string)
		if created["resultType"] != "task" || id == "" {
			t.Fatalf("the prompt tool answered %v, want a CreateTaskResult", created)
		}
		g.Release()
		synctest.Wait()
		got := c.ok(methodTasksGet, id)
		checkTaskFields(t, "tasks/get once completed", got, id, "completed")
		if s, _ := got["result"].(map[string]any)["structuredContent"].(map[string]any); s["value"] != "eventually" || s["prompt"] != "speak" {
			t.Fatalf("inlined result %v", got["result"])
		}
	})
}
