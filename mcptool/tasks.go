package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Task-based tools (MCP 2025-11-25, basic/utilities/tasks, experimental).
// A server's tool may declare execution.taskSupport "required": it must
// then be called as a task — tools/call with a task field answers at once
// with a CreateTaskResult, and the result is fetched by polling tasks/get
// and asking tasks/result. The Go SDK's client (v1.8.0) knows nothing of
// tasks, so the connection under it does: it sees which tools require
// tasks (the tools/list answers) and whether the server takes them (its
// initialize answer's capabilities.tasks.requests.tools.call), marks such
// a tools/call as a task, and answers the SDK's call with the task's final
// CallToolResult, got on the same connection with its own request ids.
// The SDK's cancellation of the call becomes tasks/cancel, and each status
// the task reports becomes a progress report of the call. A tool whose
// taskSupport is "optional" is called plainly: the answer is the same and
// the call's timeout bounds it alike.

// Task statuses (the schema's TaskStatus).
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// defaultPoll is how often a task is asked about when its server suggests
// no pollInterval; minPoll and maxPoll bound what a server suggests, so a
// server can neither make fsd spin nor leave a finished task unseen for
// long.
const (
	defaultPoll = time.Second
	minPoll     = 10 * time.Millisecond
	maxPoll     = 10 * time.Second
)

// taskState is the schema's Task: what tasks/get, a CreateTaskResult's
// task and notifications/tasks/status say of a task.
type taskState struct {
	TaskID        string   `json:"taskId"`
	Status        string   `json:"status"`
	StatusMessage string   `json:"statusMessage,omitempty"`
	PollInterval  *float64 `json:"pollInterval,omitempty"`
}

func (t taskState) poll() time.Duration {
	if t.PollInterval == nil {
		return defaultPoll
	}
	// Bounded as a float: a value too large for a Duration converts to
	// whatever the machine gives (the most negative one on amd64), which
	// would poll at the shortest interval instead of the longest.
	ms := min(max(*t.PollInterval, float64(minPoll/time.Millisecond)), float64(maxPoll/time.Millisecond))
	return time.Duration(ms * float64(time.Millisecond))
}

// taskTransport is a transport whose connections call task-based tools as
// tasks. status receives each status a task reports, with the progress
// token of the call it runs.
type taskTransport struct {
	mcp.Transport
	status func(token any, t taskState, n int)
	// progress receives the server's progress notifications as the
	// connection reads them, before the answers that follow them.
	progress func(p *mcp.ProgressNotificationParams)
	// protocol receives the protocol version the server agreed to, which
	// the Streamable HTTP transport sends as a header; wrapped, it is no
	// longer told by the SDK.
	protocol func(version string)
	// kinds are the tools that require tasks, kept by the server across
	// its connections: a server started again after it stopped is not
	// asked for its tools again, yet its task tools are still tasks.
	kinds *taskKinds
}

// taskKinds notes which tools of a server require tasks, from the
// tools/list answers of any of its connections.
type taskKinds struct {
	mu       sync.Mutex
	tools    map[string]bool
	required int // how many of them do
}

func newTaskKinds() *taskKinds { return &taskKinds{tools: map[string]bool{}} }

// any reports whether some tool requires a task.
func (k *taskKinds) any() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.required > 0
}

// requires reports whether the tool requires a task.
func (k *taskKinds) requires(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.tools[name]
}

// note records whether the tool requires a task.
func (k *taskKinds) note(name string, required bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch was := k.tools[name]; {
	case required && !was:
		k.required++
	case !required && was:
		k.required--
	}
	k.tools[name] = required
}

func (t taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inner, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	kinds := t.kinds
	if kinds == nil {
		kinds = newTaskKinds()
	}
	c := &taskConn{inner: inner, status: t.status, progress: t.progress, protocol: t.protocol, kinds: kinds,
		in: make(chan readResult), injected: make(chan jsonrpc.Message),
		asked: map[string]string{}, calls: map[string]*taskCall{}, mine: map[string]chan *jsonrpc.Response{}}
	c.ctx, c.close = context.WithCancel(context.Background())
	go c.pump()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// taskConn is one connection of a taskTransport.
type taskConn struct {
	inner    mcp.Connection
	status   func(token any, t taskState, n int)
	progress func(p *mcp.ProgressNotificationParams)
	protocol func(version string)
	kinds    *taskKinds

	in       chan readResult      // what the server sent, in order
	injected chan jsonrpc.Message // the answers of calls run as tasks
	// ctx ends when the connection closes: it bounds this connection's
	// own requests.
	ctx   context.Context
	close context.CancelFunc
	seq   atomic.Int64

	mu     sync.Mutex
	asked  map[string]string // id → method of the SDK's requests whose answers tell of tasks
	serves bool              // the server takes tools/call as tasks
	calls  map[string]*taskCall
	mine   map[string]chan *jsonrpc.Response // this connection's own requests, by id
}

// taskCall is one tools/call sent as a task.
type taskCall struct {
	id    jsonrpc.ID
	token any // the call's progress token, if any
	// ctx ends when the SDK cancels the call or the connection closes:
	// it bounds the requests that follow the task.
	ctx    context.Context
	stop   context.CancelFunc
	status chan taskState // the latest status the server pushed

	mu   sync.Mutex
	task string // its task's id, once the server created it
}

func (t *taskCall) stopped() bool { return t.ctx.Err() != nil }

func (t *taskCall) setTask(id string) {
	t.mu.Lock()
	t.task = id
	t.mu.Unlock()
}

func (t *taskCall) taskID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.task
}

// push keeps the latest status for follow, replacing one it has not read.
func (t *taskCall) push(s taskState) {
	select {
	case <-t.status:
	default:
	}
	select {
	case t.status <- s:
	default:
	}
}

// idKey is a request id as a map key, however it was decoded.
func idKey(id any) string {
	b, _ := json.Marshal(id)
	return string(b)
}

func (c *taskConn) pump() {
	for {
		m, err := c.inner.Read(context.Background())
		select {
		case c.in <- readResult{m, err}:
		case <-c.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case m := <-c.injected:
			return m, nil
		case r := <-c.in:
			if r.err != nil {
				return nil, r.err
			}
			if !c.intercept(r.msg) {
				return r.msg, nil
			}
		case <-c.ctx.Done():
			return nil, mcp.ErrConnectionClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// intercept takes what the SDK must not see — answers to this
// connection's own requests, task creation answers, task status
// notifications — and notes what tools/list and initialize answers say of
// tasks. It reports whether it took msg.
//
// Progress notifications are taken here too, and passed on at once: the
// SDK hands a notification to its handler on another goroutine while it
// gives the answer read after it to the caller straight away, so a
// server's last report before its answer could reach the call after the
// call had ended, and be dropped. Read in order, every report a server
// sent before its answer reaches the call before the answer does.
func (c *taskConn) intercept(msg jsonrpc.Message) bool {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.mu.Lock()
		if len(c.mine)+len(c.calls)+len(c.asked) == 0 {
			// The common case, an answer of a plain call: nothing to
			// look up.
			c.mu.Unlock()
			return false
		}
		key := idKey(m.ID.Raw())
		ch, own := c.mine[key]
		delete(c.mine, key)
		call, isTask := c.calls[key]
		method := c.asked[key]
		delete(c.asked, key)
		c.mu.Unlock()
		switch {
		case own:
			ch <- m // buffered
			return true
		case isTask:
			return c.created(call, m)
		case method != "" && m.Error == nil:
			c.learn(method, m.Result)
		}
	case *jsonrpc.Request:
		if !m.ID.IsValid() && m.Method == "notifications/progress" && c.progress != nil {
			var p mcp.ProgressNotificationParams
			if json.Unmarshal(m.Params, &p) == nil {
				c.progress(&p)
			}
			return true
		}
		if m.ID.IsValid() || m.Method != "notifications/tasks/status" {
			return false
		}
		var t taskState
		if json.Unmarshal(m.Params, &t) == nil {
			c.notify(t)
		}
		return true
	}
	return false
}

// learn notes whether the server takes tasks and which tools require them.
func (c *taskConn) learn(method string, result json.RawMessage) {
	switch method {
	case "initialize":
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
			Capabilities    struct {
				Tasks *struct {
					Requests *struct {
						Tools *struct {
							Call *struct{} `json:"call"`
						} `json:"tools"`
					} `json:"requests"`
				} `json:"tasks"`
			} `json:"capabilities"`
		}
		if json.Unmarshal(result, &r) != nil {
			return
		}
		if c.protocol != nil && r.ProtocolVersion != "" {
			c.protocol(r.ProtocolVersion)
		}
		t := r.Capabilities.Tasks
		c.mu.Lock()
		c.serves = t != nil && t.Requests != nil && t.Requests.Tools != nil && t.Requests.Tools.Call != nil
		c.mu.Unlock()
	case "tools/list":
		var r struct {
			Tools []struct {
				Name      string `json:"name"`
				Execution *struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			} `json:"tools"`
		}
		if json.Unmarshal(result, &r) != nil {
			return
		}
		for _, t := range r.Tools {
			c.kinds.note(t.Name, t.Execution != nil && t.Execution.TaskSupport == "required")
		}
	}
}

// created handles the answer to a tools/call sent as a task: a
// CreateTaskResult starts following the task; anything else (an error, a
// server that answered at once) goes to the SDK as it is.
func (c *taskConn) created(call *taskCall, m *jsonrpc.Response) bool {
	var r struct {
		Task *taskState `json:"task"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || r.Task == nil || r.Task.TaskID == "" {
		c.forget(call)
		return false
	}
	call.setTask(r.Task.TaskID)
	if call.stopped() {
		// Given up before the task existed: nobody waits for it.
		c.forget(call)
		c.cancelTask(r.Task.TaskID)
		return true
	}
	go c.follow(call, *r.Task)
	return true
}

// forget ends a call run as a task: answered, given up, or not a task.
func (c *taskConn) forget(call *taskCall) {
	c.mu.Lock()
	delete(c.calls, idKey(call.id.Raw()))
	c.mu.Unlock()
	call.stop()
}

// notify passes a task's pushed status to the call that follows it.
func (c *taskConn) notify(t taskState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.calls {
		if call.taskID() == t.TaskID {
			call.push(t)
		}
	}
}

// follow polls a task until it ends, reporting each status, then answers
// the SDK's call with tasks/result's answer. The SDK cancelling the call
// (a timeout, the run cancelled) becomes tasks/cancel.
//
// P10: a tool that requires a task is followed to its result.
func (c *taskConn) follow(call *taskCall, t taskState) {
	defer c.forget(call)
	last, n := "", 0
	for {
		if s := t.Status + "\x00" + t.StatusMessage; s != last && c.status != nil && call.token != nil {
			last = s
			n++
			c.status(call.token, t, n)
		}
		switch t.Status {
		case taskCompleted, taskFailed, taskInputRequired:
			// tasks/result waits for the end; an input_required task's
			// questions come during it, as requests the SDK answers.
			resp, ok := c.ask(call, "tasks/result", t.TaskID)
			if !ok {
				return
			}
			if t.Status == taskFailed && (resp.Error != nil || len(resp.Result) == 0) {
				// No result to give: what the task said of its failure.
				msg := "the task failed" + suffix(t.StatusMessage)
				if resp.Error != nil {
					msg += " (tasks/result: " + resp.Error.Error() + ")"
				}
				resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
			}
			c.answer(call, resp.Result, resp.Error)
			return
		case taskCancelled:
			c.answer(call, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server cancelled the task" + suffix(t.StatusMessage)})
			return
		}
		timer := time.NewTimer(t.poll())
		select {
		case <-timer.C:
			resp, ok := c.ask(call, "tasks/get", t.TaskID)
			if !ok {
				return
			}
			var next taskState
			if resp.Error != nil || json.Unmarshal(resp.Result, &next) != nil || next.Status == "" {
				err := resp.Error
				if err == nil {
					err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks/get answered no task status"}
				}
				c.answer(call, nil, err)
				return
			}
			next.TaskID = t.TaskID
			t = next
		case next := <-call.status:
			timer.Stop()
			t = next
		case <-call.ctx.Done():
			timer.Stop()
			c.cancelTask(t.TaskID)
			return
		}
	}
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// ask sends one of this connection's own requests about a task and waits
// for its answer; ok is false when the call was cancelled (the task is
// then cancelled too) or the connection closed.
func (c *taskConn) ask(call *taskCall, method, taskID string) (*jsonrpc.Response, bool) {
	ch, err := c.send(call.ctx, method, taskID)
	if err == nil {
		select {
		case resp := <-ch:
			return resp, true
		case <-call.ctx.Done():
			// The answer, if it comes, is taken and dropped: its id
			// stays this connection's until then.
		}
	}
	if call.stopped() {
		c.cancelTask(taskID)
		return nil, false
	}
	c.answer(call, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + ": " + err.Error()})
	return nil, false
}

// send writes one of this connection's own requests about a task; its
// answer comes on the channel. The id stays this connection's until the
// answer comes, so a late answer is taken, never passed to the SDK.
func (c *taskConn) send(ctx context.Context, method, taskID string) (chan *jsonrpc.Response, error) {
	id, err := jsonrpc.MakeID(fmt.Sprintf("fsd-task-%d", c.seq.Add(1)))
	if err != nil {
		return nil, err
	}
	params, _ := json.Marshal(map[string]string{"taskId": taskID})
	key := idKey(id.Raw())
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	c.mine[key] = ch
	c.mu.Unlock()
	if err := c.write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		c.mu.Lock()
		delete(c.mine, key)
		c.mu.Unlock()
		return nil, err
	}
	return ch, nil
}

// cancelTask asks the server to cancel a task whose call was given up,
// unless the connection is closing; its answer is not waited for, nor its
// sending (an HTTP request may take a while).
func (c *taskConn) cancelTask(taskID string) {
	if c.ctx.Err() != nil {
		return
	}
	go func() { _, _ = c.send(c.ctx, "tasks/cancel", taskID) }()
}

// answer gives the SDK the final answer of a call run as a task.
func (c *taskConn) answer(call *taskCall, result json.RawMessage, err error) {
	select {
	case c.injected <- &jsonrpc.Response{ID: call.id, Result: result, Error: err}:
	case <-call.ctx.Done():
	}
}

func (c *taskConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		if req.ID.IsValid() {
			msg = c.outgoing(req)
		} else if req.Method == "notifications/cancelled" && c.cancelled(req) {
			// The task is cancelled with tasks/cancel instead, which a
			// task's server acts on.
			return nil
		}
	}
	return c.write(ctx, msg)
}

// write sends a message; a Connection takes concurrent writes, and over
// Streamable HTTP a write lasts until the server answers its request, so
// none waits for another.
func (c *taskConn) write(ctx context.Context, msg jsonrpc.Message) error {
	return c.inner.Write(ctx, msg)
}

// outgoing notes the SDK's requests whose answers tell of tasks, and marks
// a call of a tool that requires a task as a task.
func (c *taskConn) outgoing(req *jsonrpc.Request) jsonrpc.Message {
	key := idKey(req.ID.Raw())
	switch req.Method {
	case "initialize", "tools/list":
		c.mu.Lock()
		c.asked[key] = req.Method
		c.mu.Unlock()
	case "tools/call":
		c.mu.Lock()
		serves := c.serves
		c.mu.Unlock()
		if !serves || !c.kinds.any() {
			return req
		}
		var p map[string]json.RawMessage
		if json.Unmarshal(req.Params, &p) != nil {
			return req
		}
		var name string
		_ = json.Unmarshal(p["name"], &name)
		if !c.kinds.requires(name) {
			return req
		}
		var meta struct {
			Token any `json:"progressToken"`
		}
		_ = json.Unmarshal(p["_meta"], &meta)
		p["task"] = json.RawMessage(`{}`)
		params, err := json.Marshal(p)
		if err != nil {
			return req
		}
		call := &taskCall{id: req.ID, token: meta.Token, status: make(chan taskState, 1)}
		call.ctx, call.stop = context.WithCancel(c.ctx)
		c.mu.Lock()
		c.calls[key] = call
		c.mu.Unlock()
		return &jsonrpc.Request{ID: req.ID, Method: req.Method, Params: params, Extra: req.Extra}
	}
	return req
}

// cancelled stops following the task of a call the SDK cancelled, and
// reports whether the notification is to be held back: a task the server
// created is cancelled with tasks/cancel; a call not yet answered with a
// task gets the notification as any call would.
//
// P11: a task whose call was given up is cancelled on its server.
func (c *taskConn) cancelled(n *jsonrpc.Request) bool {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(n.Params, &p) != nil {
		return false
	}
	c.mu.Lock()
	call, ok := c.calls[idKey(p.RequestID)]
	c.mu.Unlock()
	if !ok {
		return false
	}
	call.stop()
	return call.taskID() != ""
}

func (c *taskConn) Close() error {
	c.close()
	return c.inner.Close()
}

func (c *taskConn) SessionID() string { return c.inner.SessionID() }
