package mcptool

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
)

// taskServer is an MCP server that speaks tasks, written on the wire from
// the 2025-11-25 schema (the Go SDK's server has no tasks): Streamable
// HTTP, one JSON answer per request. Its tools:
//   - research requires a task: two working stages, then completed with a
//     report;
//   - broken requires a task, which fails with an isError result;
//   - forever requires a task that works until tasks/cancel;
//   - slow requires a task that works until tasks/cancel, and over stdio
//     is created only once the call was cancelled;
//   - pushed requires a task that ends at once, which over stdio the
//     server says with notifications/tasks/status, and which it refuses
//     to be polled about;
//   - garbled and empty require a task that completes at its first poll,
//     whose tasks/result answers a string and null;
//   - maybe takes a task or not (taskSupport optional);
//   - plain is an ordinary tool, and so is cancelled (stdio only).
type taskServer struct {
	*httptest.Server
	mu        sync.Mutex
	tasks     map[string]*fakeTask
	versions  map[string]bool // MCP-Protocol-Version of the requests after initialize
	cancelled chan string     // task ids tasks/cancel named
}

type fakeTask struct {
	tool, arg string
	polls     int
	status    string
	msg       string
}

const fakeProtocol = "2025-11-25"

func newTaskServer(t *testing.T) *taskServer {
	ts := &taskServer{tasks: map[string]*fakeTask{}, versions: map[string]bool{}, cancelled: make(chan string, 8)}
	ts.Server = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *taskServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	// The SDK asks server/discover first (a later protocol's), then
	// initializes when the server does not know it.
	if req.Method != "initialize" && req.Method != "server/discover" {
		ts.mu.Lock()
		ts.versions[r.Header.Get("Mcp-Protocol-Version")] = true
		ts.mu.Unlock()
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result, rerr := ts.answer(req.Method, req.Params)
	msg := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(msg)
}

type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func text(s string, isError bool) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}, "isError": isError}
}

func (ts *taskServer) answer(method string, params json.RawMessage) (any, *wireError) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      json.RawMessage `json:"task"`
		TaskID    string          `json:"taskId"`
	}
	_ = json.Unmarshal(params, &p)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	task := ts.tasks[p.TaskID]
	switch method {
	case "initialize":
		return map[string]any{"protocolVersion": fakeProtocol, "serverInfo": map[string]any{"name": "tasks", "version": "1"},
			"capabilities": map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}}, nil
	case "tools/list":
		obj := map[string]any{"type": "object"}
		required := map[string]any{"taskSupport": "required"}
		return map[string]any{"tools": []any{
			map[string]any{"name": "research", "inputSchema": obj, "execution": required},
			map[string]any{"name": "broken", "inputSchema": obj, "execution": required},
			map[string]any{"name": "forever", "inputSchema": obj, "execution": required},
			map[string]any{"name": "slow", "inputSchema": obj, "execution": required},
			map[string]any{"name": "pushed", "inputSchema": obj, "execution": required},
			map[string]any{"name": "garbled", "inputSchema": obj, "execution": required},
			map[string]any{"name": "empty", "inputSchema": obj, "execution": required},
			map[string]any{"name": "plain", "inputSchema": obj},
			map[string]any{"name": "maybe", "inputSchema": obj, "execution": map[string]any{"taskSupport": "optional"}},
			map[string]any{"name": "cancelled", "inputSchema": obj},
		}}, nil
	case "tools/call":
		if p.Name == "plain" || p.Name == "maybe" && len(p.Task) == 0 {
			return text(fmt.Sprintf("%s, task field %s", p.Name, p.Task), false), nil
		}
		if len(p.Task) == 0 {
			return nil, &wireError{-32601, "tool " + p.Name + " requires a task"}
		}
		id := fmt.Sprintf("task-%d", len(ts.tasks)+1)
		ts.tasks[id] = &fakeTask{tool: p.Name, arg: string(p.Arguments), status: taskWorking, msg: "queued"}
		return map[string]any{"task": ts.state(id)}, nil
	case "tasks/get":
		if task == nil {
			return nil, &wireError{-32602, "no task " + p.TaskID}
		}
		task.polls++
		switch {
		case task.tool == "pushed":
			return nil, &wireError{-32603, "pushed is not to be polled: its status was sent"}
		case task.tool == "research" && task.polls < 3:
			task.msg = fmt.Sprintf("stage %d", task.polls)
		case task.tool == "research":
			task.status, task.msg = taskCompleted, "done"
		case task.tool == "broken":
			task.status, task.msg = taskFailed, "the sources were unreachable"
		case task.tool == "garbled" || task.tool == "empty":
			task.status, task.msg = taskCompleted, "done"
		}
		return ts.state(p.TaskID), nil
	case "tasks/result":
		switch {
		case task == nil:
			return nil, &wireError{-32602, "no task " + p.TaskID}
		case task.tool == "garbled":
			return "not a result", nil
		case task.tool == "empty":
			return nil, nil
		case task.status == taskCompleted:
			return text("report on "+task.arg, false), nil
		case task.status == taskFailed:
			return text("failed: "+task.msg, true), nil
		}
		return nil, &wireError{-32603, "the test server answers tasks/result only for an ended task"}
	case "tasks/cancel":
		if task == nil {
			return nil, &wireError{-32602, "no task " + p.TaskID}
		}
		task.status = taskCancelled
		ts.cancelled <- p.TaskID
		return ts.state(p.TaskID), nil
	}
	return nil, &wireError{-32601, "no method " + method}
}

// state is a task as the schema's Task has it; ts.mu is held.
func (ts *taskServer) state(id string) map[string]any {
	t := ts.tasks[id]
	poll := 10
	if t.tool == "pushed" {
		poll = 60000 // the status comes before any poll
	}
	return map[string]any{"taskId": id, "status": t.status, "statusMessage": t.msg, "ttl": nil, "pollInterval": poll,
		"createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"}
}

// taskTools acquires the task server's tools, each call bounded by timeout.
func taskTools(t *testing.T, ts *taskServer, timeout time.Duration) map[string]*Tool {
	t.Helper()
	s := httpSkill(ts.URL, nil)
	s.MCP[0].Timeout = timeout
	p := newPool(t, newEnv(t), Options{})
	tools, notes := p.Acquire(context.Background(), s)
	if len(notes) > 0 {
		t.Fatalf("notes: %v", notes)
	}
	return byName(tools)
}

// progressOf collects a call's progress reports.
type progressOf struct {
	mu   sync.Mutex
	msgs []string
	done []float64
}

func (p *progressOf) hooks() tool.Hooks {
	return tool.Hooks{Progress: func(pr tool.Progress) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.msgs = append(p.msgs, pr.Message)
		p.done = append(p.done, pr.Done)
	}}
}

// A task's statuses reach the call as numbered progress reports, and the
// call answers with tasks/result's result; an ordinary tool of the same
// server, and one that only may be a task, are called without a task.
// Every request after initialize carries the protocol version the server
// agreed to.
//
// P10: a tool that requires a task is called as one.
func TestTaskToolAnswersWithItsResult(t *testing.T) {
	testpar.UnlessRace(t)
	ts := newTaskServer(t)
	tools := taskTools(t, ts, 0)
	var pr progressOf
	res := tools["research"].Call(tool.WithHooks(context.Background(), pr.hooks()), json.RawMessage(`{"q":"tides"}`), nil)
	if res.IsError || res.Text != `report on {"q":"tides"}` {
		t.Fatalf("result: %+v", res)
	}
	want := []string{"task working: queued", "task working: stage 1", "task working: stage 2", "task completed: done"}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if strings.Join(pr.msgs, "|") != strings.Join(want, "|") || pr.done[3] != 4 {
		t.Errorf("progress: %q %v, want %q numbered 1 to 4", pr.msgs, pr.done, want)
	}
	for _, name := range []string{"plain", "maybe"} {
		if res := call(tools[name], `{}`); res.IsError || res.Text != name+", task field " {
			t.Errorf("%s tool: %+v", name, res)
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.tasks) != 1 || len(ts.versions) != 1 || !ts.versions[fakeProtocol] {
		t.Errorf("%d tasks, protocol headers %v; want 1 task, every request %s", len(ts.tasks), ts.versions, fakeProtocol)
	}
}

// A failed task's isError result is the call's tool error.
func TestTaskToolFailed(t *testing.T) {
	testpar.UnlessRace(t)
	tools := taskTools(t, newTaskServer(t), 0)
	res := call(tools["broken"], `{}`)
	if !res.IsError || res.Text != "failed: the sources were unreachable" {
		t.Fatalf("result: %+v", res)
	}
}

// A completed task whose tasks/result is no CallToolResult is a tool
// error the model can read, not a hang or a panic (the SDK drops the
// session it came on); the server's next session still calls its task
// tools as tasks, though it is not asked for its tools again.
func TestTaskToolResultOfBadShape(t *testing.T) {
	testpar.UnlessRace(t)
	tools := taskTools(t, newTaskServer(t), 30*time.Second)
	if res := call(tools["garbled"], `{}`); !res.IsError || res.Text == "" {
		t.Errorf("garbled: %+v, want a tool error", res)
	}
	if res := call(tools["research"], `{}`); res.IsError || res.Text != "report on {}" {
		t.Errorf("research after the session was dropped: %+v", res)
	}
}

// A server's pollInterval is bounded however large: one too large for a
// Duration waits the longest, never the shortest.
func TestTaskPollBounded(t *testing.T) {
	testpar.UnlessRace(t)
	for _, c := range []struct {
		ms   float64
		want time.Duration
	}{{-5, minPoll}, {0, minPoll}, {250, 250 * time.Millisecond}, {1e7, maxPoll}, {1e300, maxPoll}} {
		ms := c.ms
		if got := (taskState{PollInterval: &ms}).poll(); got != c.want {
			t.Errorf("pollInterval %g: %v, want %v", c.ms, got, c.want)
		}
	}
}

// A run cancelled during a task's call cancels the task on its server
// with tasks/cancel; a task that never ends is bounded by the server's
// call timeout and cancelled alike.
//
// P11: a task whose call was given up is cancelled on its server.
func TestTaskToolCancelled(t *testing.T) {
	testpar.UnlessRace(t)
	for _, by := range []string{"run", "timeout"} {
		t.Run(by, func(t *testing.T) {
			ts := newTaskServer(t)
			timeout := time.Duration(0)
			if by == "timeout" {
				timeout = 300 * time.Millisecond
			}
			tools := taskTools(t, ts, timeout)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hooks := tool.Hooks{}
			if by == "run" {
				// Cancelled once the task reports it is working: the
				// task exists on the server.
				var once sync.Once
				hooks.Progress = func(tool.Progress) { once.Do(cancel) }
			}
			res := tools["forever"].Call(tool.WithHooks(ctx, hooks), json.RawMessage(`{}`), nil)
			want := map[string]string{"run": "cancelled", "timeout": "timed out after 300ms"}[by]
			if !res.IsError || !strings.HasPrefix(res.Text, want) {
				t.Fatalf("result: %+v, want %q", res, want)
			}
			select {
			case id := <-ts.cancelled:
				if id != "task-1" {
					t.Errorf("cancelled %s, want task-1", id)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the server got no tasks/cancel")
			}
		})
	}
}

// envTaskServer=stdio makes the test binary serve the task server on
// stdio (TestMain).
const envTaskServer = "FSD_MCPTOOL_TASKS"

// serveTasksOnStdio serves the task server on stdin and stdout, each
// request on its own goroutine, and exits when stdin ends. A call of slow
// says it started (a progress notification) and is answered with its task
// only once the client cancelled it; the plain tool cancelled answers with
// the id of the first task tasks/cancel named, waiting for one.
func serveTasksOnStdio() {
	ts := &taskServer{tasks: map[string]*fakeTask{}, versions: map[string]bool{}, cancelled: make(chan string, 8)}
	var outMu sync.Mutex
	send := func(msg map[string]any) {
		msg["jsonrpc"] = "2.0"
		outMu.Lock()
		defer outMu.Unlock()
		_ = json.NewEncoder(os.Stdout).Encode(msg)
	}
	var mu sync.Mutex
	notified := map[string]chan struct{}{}
	cancelOf := func(id string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if notified[id] == nil {
			notified[id] = make(chan struct{})
		}
		return notified[id]
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		if len(req.ID) == 0 {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if req.Method == "notifications/cancelled" && json.Unmarshal(req.Params, &p) == nil {
				close(cancelOf(string(p.RequestID)))
			}
			continue
		}
		go func() {
			var p struct {
				Name string `json:"name"`
				Meta struct {
					Token any `json:"progressToken"`
				} `json:"_meta"`
			}
			_ = json.Unmarshal(req.Params, &p)
			if req.Method == "tools/call" && p.Name == "slow" {
				send(map[string]any{"method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.Token, "progress": 1, "message": "creating the task"}})
				select {
				case <-cancelOf(string(req.ID)):
				case <-time.After(30 * time.Second):
				}
			}
			if req.Method == "tools/call" && p.Name == "cancelled" {
				select {
				case id := <-ts.cancelled:
					send(map[string]any{"id": req.ID, "result": text(id, false)})
				case <-time.After(30 * time.Second):
					send(map[string]any{"id": req.ID, "result": text("no task was cancelled", true)})
				}
				return
			}
			result, rerr := ts.answer(req.Method, req.Params)
			if rerr != nil {
				send(map[string]any{"id": req.ID, "error": rerr})
				return
			}
			send(map[string]any{"id": req.ID, "result": result})
			if req.Method == "tools/call" && p.Name == "pushed" {
				ts.mu.Lock()
				id := fmt.Sprintf("task-%d", len(ts.tasks))
				ts.tasks[id].status, ts.tasks[id].msg = taskCompleted, "done"
				st := ts.state(id)
				ts.mu.Unlock()
				send(map[string]any{"method": "notifications/tasks/status", "params": st})
			}
		}()
	}
	os.Exit(0)
}

// A call given up before its server answered with the task (over stdio,
// where the answer still comes) cancels the task once it exists.
//
// P11: a task whose call was given up is cancelled on its server.
func TestTaskToolCancelledBeforeTheTaskExists(t *testing.T) {
	testpar.UnlessRace(t)
	ts := stdioTaskTools(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The server says the call reached it; the run is cancelled then,
	// before the server answers with the task.
	res := ts["slow"].Call(tool.WithHooks(ctx, tool.Hooks{Progress: func(tool.Progress) { cancel() }}), json.RawMessage(`{}`), nil)
	if !res.IsError || !strings.HasPrefix(res.Text, "cancelled") {
		t.Fatalf("result: %+v", res)
	}
	if res := call(ts["cancelled"], `{}`); res.IsError || res.Text != "task-1" {
		t.Fatalf("the server's cancelled tasks: %+v, want task-1", res)
	}
}

// A task's status the server pushes (notifications/tasks/status) is taken
// at once: the task's end is not polled for.
func TestTaskToolStatusPushed(t *testing.T) {
	testpar.UnlessRace(t)
	var pr progressOf
	res := stdioTaskTools(t)["pushed"].Call(tool.WithHooks(context.Background(), pr.hooks()), json.RawMessage(`{}`), nil)
	if res.IsError || res.Text != "report on {}" {
		t.Fatalf("result: %+v", res)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if strings.Join(pr.msgs, "|") != "task working: queued|task completed: done" {
		t.Errorf("progress: %q", pr.msgs)
	}
}

// stdioTaskTools starts this test binary as the task server over stdio
// and returns its tools by name.
func stdioTaskTools(t *testing.T) map[string]*Tool {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.vars[envTaskServer] = "stdio"
	s := &spec.Skill{ID: "tracker", Version: "1.0.0", Dir: t.TempDir(), MCP: []spec.MCPServer{{
		Name: "t", Command: []string{exe, "-test.run=^$"}, Env: []string{envTaskServer},
	}}}
	p := newPool(t, e, Options{Sandbox: unconfined})
	tools, notes := p.Acquire(context.Background(), s)
	if len(notes) > 0 {
		t.Fatalf("notes: %v", notes)
	}
	return byName(tools)
}
