package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/humantime"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// The Tasks extension (io.modelcontextprotocol/tasks, SEP-2663), server
// directed (mcp-server §4.12). A run already outlives its call and is
// collected later by id; a task is that same run seen through the
// extension's methods: the task id is the run id, and the registry's record
// is the only state, so check_run and tasks/get read the same run.
//
// The go-sdk v1.8.0 has no Tasks support: it advertises extensions and routes
// custom methods (ServerCapabilities.Extensions, AddReceivingCustomMethod),
// but a tool handler can only return a *mcp.CallToolResult. A receiving
// middleware on tools/call (tasksMiddleware) therefore swaps the handler's
// placeholder for the CreateTaskResult the handler filed in the call's
// context.

const (
	// tasksExtension is the extension's identifier.
	tasksExtension = "io.modelcontextprotocol/tasks"
	// taskPollInterval is the polling interval a task suggests: a run's
	// steps are model turns of seconds, so polling faster learns nothing.
	taskPollInterval = time.Second
)

// Task statuses (the extension's TaskStatus); input_required never occurs,
// since a run never asks its caller for input.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// The extension's methods. tasks/result and tasks/list are not registered:
// the extension removed them, so the SDK answers -32601 for them.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
)

// renderFunc renders a run's record as the tools/call result of the tool
// that launched it; tasks/get inlines the same rendering once the run is
// terminal, so a task's result is exactly what the call would have
// returned.
type renderFunc func(runs.Result) (*mcp.CallToolResult, error)

// task is the extension's Task: the fields a CreateTaskResult and a
// tasks/get result share.
type task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is never null: a record is kept RetainCompleted after its run
	// ends, so the time to live from creation is known (see taskOf).
	TTLMs          int64 `json:"ttlMs"`
	PollIntervalMs int64 `json:"pollIntervalMs"`
}

// createTaskResult is the flat CreateTaskResult a tools/call answers with
// when it becomes a task.
type createTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"` // always "task"
	task
}

// getTaskResult is tasks/get's DetailedTask: the task, with the call's
// result inlined once completed, or the JSON-RPC error once failed.
type getTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"` // always "complete"
	task
	Result *mcp.CallToolResult `json:"result,omitempty"`
	Error  *taskError          `json:"error,omitempty"`
}

// taskError is a JSON-RPC error object, inlined in a failed task.
type taskError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// taskAck is the empty acknowledgement of tasks/update and tasks/cancel.
type taskAck struct {
	mcp.ResultBase
	ResultType string `json:"resultType"` // always "complete"
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
// inputResponses (tasks/update) is accepted and ignored: a run never has
// an outstanding input request, and the extension says responses to keys
// that are not outstanding are ignored.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses map[string]any `json:"inputResponses,omitempty"`
}

// taskRenderers remembers how each run answered as a task renders its
// result, for tasks/get. An entry lives as long as the registry holds the
// run: it is dropped once the registry has evicted the run.
type taskRenderers struct {
	mu sync.Mutex
	m  map[string]renderFunc
	// pruneAt is the size at which put next prunes: each prune looks every
	// entry up in the registry, which with a shared run store is a
	// database round trip, so pruning when the table has doubled keeps
	// the cost per put constant.
	pruneAt int
}

func (t *taskRenderers) put(reg *runs.Registry, id string, render renderFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]renderFunc{}
	}
	// Pruned here, on the rare path (a run outliving its deadline), so
	// the table holds at most about twice the entries the registry holds
	// records.
	if len(t.m) >= t.pruneAt {
		for old := range t.m {
			if _, ok := reg.Check(old); !ok {
				delete(t.m, old)
			}
		}
		t.pruneAt = max(minPruneAt, 2*len(t.m))
	}
	t.m[id] = render
}

// minPruneAt: below this many entries the table is not pruned at all.
const minPruneAt = 64

// get is the renderer the run id was answered with, runResult (run_prompt's
// record) for a run that was never answered as a task: its running reply
// named the run id, and tasks/get may collect any run.
func (t *taskRenderers) get(id string) renderFunc {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.m[id]; ok {
		return r
	}
	return runResult
}

// taskSlot is where a tools/call handler files the task it answers with;
// tasksMiddleware puts one in every tools/call's context.
type taskSlot struct{ task *createTaskResult }

type taskSlotKey struct{}

// tasksMiddleware answers a tools/call with the CreateTaskResult its handler
// filed, instead of the handler's placeholder result (see answerRun).
func (s *Server) tasksMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		return withTaskSlot(ctx, func(ctx context.Context) (mcp.Result, error) { return next(ctx, method, req) })
	}
}

// withTaskSlot is tasksMiddleware's body for one tools/call, which call
// answers: the SDK's chain through the middleware, or the server's
// direct answer (AnswerCall), which no middleware sees.
func withTaskSlot(ctx context.Context, call func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	slot := &taskSlot{}
	res, err := call(context.WithValue(ctx, taskSlotKey{}, slot))
	if err != nil || slot.task == nil {
		return res, err
	}
	return slot.task, nil
}

// registerTasks advertises the extension on srv and routes its methods.
// Every mcp.Server that serves this Server's tools must be registered, so
// that a task created through one can be read through it.
func (s *Server) registerTasks(srv *mcp.Server) error {
	srv.AddReceivingMiddleware(s.tasksMiddleware)
	for method, h := range map[string]func(context.Context, *mcp.ServerSession, *taskParams) (mcp.Result, error){
		methodTasksGet:    s.tasksGet,
		methodTasksUpdate: s.tasksUpdate,
		methodTasksCancel: s.tasksCancel,
	} {
		if err := mcp.AddReceivingCustomMethod(srv, method, h); err != nil {
			return fmt.Errorf("route %s: %w", method, err)
		}
	}
	return nil
}

// answerRun is how a tool handler that launched a run answers once
// [runs.Registry.Settle] has returned res: when the run is still going and
// the caller declared the Tasks extension (on this request, or for its
// session), with a CreateTaskResult whose task id is the run id, and
// tasks/get later inlines render of the terminal record; otherwise with
// render(res), exactly as without the extension (a running record tells
// the caller to collect it with check_run).
//
// Any tool that launches runs uses it, so that its long runs are tasks too.
func (s *Server) answerRun(ctx context.Context, req *mcp.CallToolRequest, res runs.Result, render renderFunc) (*mcp.CallToolResult, error) {
	placeholder, err := render(res)
	if err != nil || res.Status != runs.StatusRunning || !tasksDeclared(req) {
		return placeholder, err
	}
	slot, ok := ctx.Value(taskSlotKey{}).(*taskSlot)
	if !ok {
		// Not reached through tasksMiddleware: nothing could send a task.
		return placeholder, nil
	}
	v, ok := s.runs.View(res.RunID)
	switch {
	case !ok:
		// Evicted already (a zero retention): the running reply still
		// names the run, and check_run says it is gone.
		return placeholder, nil
	case v.Status != runs.StatusRunning:
		// It ended since Settle looked: its result beats a task to poll.
		return render(v.Result)
	}
	s.renderers.put(s.runs, res.RunID, render)
	slot.task = &createTaskResult{ResultType: "task", task: s.taskOf(v, time.Now())}
	return placeholder, nil
}

// requireTasks refuses a call from a client that did not declare the Tasks
// extension, for a tool that can only answer with a task; call it before
// launching anything.
func requireTasks(req *mcp.CallToolRequest) error {
	if tasksDeclared(req) {
		return nil
	}
	return tasksNotNegotiated("this tool answers only with a task")
}

// tasksDeclared reports whether the caller declared the extension: in this
// request's _meta (2026-07-28) or, without per-request capabilities, in its
// session's initialize (2025-11-25). The SDK reads both in that order.
func tasksDeclared(req *mcp.CallToolRequest) bool {
	return hasTasks(req.ClientCapabilities())
}

// tasksDeclaredBy is tasksDeclared for the extension's own methods, which
// the SDK hands their session and params rather than a request.
func tasksDeclaredBy(ss *mcp.ServerSession, p *taskParams) bool {
	if raw, ok := p.Meta[mcp.MetaKeyClientCapabilities]; ok {
		var caps mcp.ClientCapabilities
		b, err := json.Marshal(raw)
		if err != nil || json.Unmarshal(b, &caps) != nil {
			return false
		}
		return hasTasks(&caps)
	}
	if ss == nil || ss.InitializeParams() == nil {
		return false
	}
	return hasTasks(ss.InitializeParams().Capabilities)
}

func hasTasks(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

// tasksNotNegotiated is the extension's -32021 (missing required client
// capability), naming the capability in data as the extension shows it.
func tasksNotNegotiated(what string) error {
	data, _ := json.Marshal(map[string]any{
		"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}},
	})
	return &jsonrpc.Error{
		Code: mcp.CodeMissingRequiredClientCapabilities,
		Message: what + ", and the Tasks extension (" + tasksExtension + ") was not negotiated: declare it in the client capabilities, " +
			`per request in _meta["` + mcp.MetaKeyClientCapabilities + `"] or at initialize; without it, a long run answers running with a run_id to collect with check_run`,
		Data: data,
	}
}

// lookupTask is the gate every tasks/* method passes: the extension
// negotiated, and a task id the registry knows.
func (s *Server) lookupTask(method string, ss *mcp.ServerSession, p *taskParams) (runs.View, error) {
	if !tasksDeclaredBy(ss, p) {
		return runs.View{}, tasksNotNegotiated(method + " is part of the Tasks extension")
	}
	if p.TaskID == "" {
		return runs.View{}, invalidParams("%s needs params.taskId, the taskId a tools/call answered with (the run id)", method)
	}
	v, ok, err := s.runs.Lookup(context.Background(), p.TaskID)
	if err != nil {
		s.log.Error(method+" could not read the run store", "run_id", p.TaskID, "error", err.Error())
		return runs.View{}, internalError("task %s cannot be read now: the run store does not answer; retry in a moment", strconv.Quote(p.TaskID))
	}
	if !ok {
		return runs.View{}, invalidParams("there is no task %s: a task can be read while its run is going and for %s after it finishes, and older ones have been evicted; start the run again",
			strconv.Quote(p.TaskID), humantime.Format(s.runs.RetainCompleted()))
	}
	return v, nil
}

func (s *Server) tasksGet(_ context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	v, err := s.lookupTask(methodTasksGet, ss, p)
	if err != nil {
		return nil, err
	}
	out := &getTaskResult{ResultType: "complete", task: s.taskOf(v, time.Now())}
	switch out.Status {
	case taskCompleted:
		if out.Result, err = s.renderers.get(v.RunID)(v.Result); err != nil {
			return nil, err
		}
	case taskFailed:
		out.Error = &taskError{Code: jsonrpc.CodeInternalError, Message: v.Error}
	}
	return out, nil
}

func (s *Server) tasksUpdate(_ context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	// A run never waits on its caller, so no response is outstanding and
	// every one is ignored; the ack is all the extension asks.
	if _, err := s.lookupTask(methodTasksUpdate, ss, p); err != nil {
		return nil, err
	}
	return &taskAck{ResultType: "complete"}, nil
}

func (s *Server) tasksCancel(_ context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	if _, err := s.lookupTask(methodTasksCancel, ss, p); err != nil {
		return nil, err
	}
	// Idempotent: the registry leaves a finished run alone and a second
	// cancellation is harmless; either way the answer is the same ack.
	s.runs.Cancel(p.TaskID)
	return &taskAck{ResultType: "complete"}, nil
}

// taskOf is a run as a task at now:
//   - running: working;
//   - stopped by a cancellation (tasks/cancel, the caller's, the shutdown):
//     cancelled;
//   - ended abnormally (a panic in the server, not the prompt): failed, the
//     extension's status for a JSON-RPC error;
//   - otherwise completed, a failed run included: its call would have
//     answered an isError result, which the extension files under completed.
//
// ttlMs counts from creation to the end of the retention window: exact once
// the run has ended, and while it runs the least it will be, since the
// window opens only at its end.
func (s *Server) taskOf(v runs.View, now time.Time) task {
	t := task{
		TaskID:         v.RunID,
		CreatedAt:      isoTime(v.Started),
		LastUpdatedAt:  isoTime(v.Started),
		PollIntervalMs: taskPollInterval.Milliseconds(),
	}
	end := now
	switch {
	case v.Status == runs.StatusRunning:
		t.Status = taskWorking
		t.StatusMessage = fmt.Sprintf("%s is running as run %s; poll tasks/get (or check_run) for its result", v.Prompt, v.RunID)
	case v.Status == runs.StatusFailed && v.Cause != nil:
		t.Status, t.StatusMessage = taskCancelled, v.Error
	case v.Status == runs.StatusFailed && v.Abnormal:
		t.Status, t.StatusMessage = taskFailed, v.Error
	case v.Status == runs.StatusFailed:
		t.Status, t.StatusMessage = taskCompleted, v.Error
	default:
		t.Status = taskCompleted
	}
	if v.Status != runs.StatusRunning {
		end = v.Finished
		t.LastUpdatedAt = isoTime(v.Finished)
	}
	t.TTLMs = max(1, (end.Sub(v.Started) + s.runs.RetainCompleted()).Milliseconds())
	return t
}

// isoTime is t as the extension's ISO 8601 timestamps, in UTC to the
// millisecond.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
