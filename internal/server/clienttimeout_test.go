package server

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// clientTimeout is how long clients built on the official TypeScript SDK
// wait for a response (its DEFAULT_REQUEST_TIMEOUT_MSEC) before they
// cancel the request; Claude Code is one of them.
const clientTimeout = 60 * time.Second

// runLength is longer than clientTimeout: the gateway answers only then.
const runLength = 90 * time.Second

// A go-sdk client that gives up after clientTimeout, as TypeScript clients
// do, gets a run longer than that back as running within its timeout, under
// the default reply deadline, and collects it: its timeout never fires, so
// nothing cancels the run.
func TestARunLongerThanTheClientTimeoutComesBackRunningAndIsCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakingHarness(t, g, deadlineLimits(config.DefaultReplyDeadline))

		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		defer cancel()
		start := time.Now()
		res, err := h.session.CallTool(ctx, &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "speak"}})
		if err != nil {
			t.Fatalf("the call failed after %v instead of coming back running: %v", time.Since(start), err)
		}
		if waited := time.Since(start); waited != config.DefaultReplyDeadline || waited >= clientTimeout {
			t.Errorf("the reply came after %v, want the %v default deadline, before the client's %v", waited, config.DefaultReplyDeadline, clientTimeout)
		}
		s := structuredOf(t, res)
		if res.IsError || s["status"] != "running" {
			t.Fatalf("result %v", s)
		}
		id := s["run_id"].(string)

		// Past the client's timeout, the run is still going.
		time.Sleep(runLength - time.Since(start))
		synctest.Wait()
		if ctx.Err() == nil {
			t.Fatal("the client's timeout should have passed by now")
		}
		if rec, ok := h.srv.Registry().Check(id); !ok || rec.Status != runs.StatusRunning {
			t.Fatalf("at %v the run is %+v (found %v), want still running", time.Since(start), rec, ok)
		}

		g.Release()
		synctest.Wait()
		done := structuredOf(t, h.ok(ToolCheckRun, map[string]any{"run_id": id}))
		if done["status"] != "completed" || done["value"] != "eventually" || done["turns"] != float64(1) {
			t.Fatalf("after the gateway answered at %v: %v", time.Since(start), done)
		}
	})
}

// The same run for a client that declared the Tasks extension: a task
// within the client's timeout, completed with the gateway's reply.
func TestARunLongerThanTheClientTimeoutIsATaskAndIsCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakingHarness(t, g, deadlineLimits(config.DefaultReplyDeadline))
		c := connectTasks(t, h, true, "")

		start := time.Now()
		created := c.run("speak", nil)
		if waited := time.Since(start); waited >= clientTimeout {
			t.Errorf("the task came after %v, past the client's %v", waited, clientTimeout)
		}
		id, _ := created["taskId"].(string)
		if created["resultType"] != "task" || created["status"] != "working" || id == "" {
			t.Fatalf("CreateTaskResult %v", created)
		}

		time.Sleep(runLength - time.Since(start))
		synctest.Wait()
		if got := c.ok(methodTasksGet, id); got["status"] != "working" {
			t.Fatalf("at %v tasks/get says %v, want working", time.Since(start), got)
		}

		g.Release()
		synctest.Wait()
		got := c.ok(methodTasksGet, id)
		result, _ := got["result"].(map[string]any)
		content, _ := result["content"].([]any)
		if got["status"] != "completed" || len(content) != 1 || content[0].(map[string]any)["text"] != "eventually" {
			t.Fatalf("tasks/get after the gateway answered: %v", got)
		}
	})
}
