package a2a

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/serve"
)

// ProtocolVersion is the A2A version of the card and the wire.
const ProtocolVersion = "0.3.0"

// Options configures Handler. The zero Options is fine.
type Options struct {
	// URL is the agent's public base URL; empty: the request's own
	// scheme and Host.
	URL string
	// Token says every request needs a bearer token (the card then
	// declares the scheme).
	Token bool
}

// Task states of A2A 0.3.0 that a turn goes through.
const (
	StateWorking       = "working"
	StateInputRequired = "input-required"
	StateCompleted     = "completed"
	StateFailed        = "failed"
	StateCanceled      = "canceled"
)

// JSON-RPC error codes: the standard ones and A2A's.
const (
	codeParse           = -32700
	codeInvalidRequest  = -32600
	codeMethodNotFound  = -32601
	codeInvalidParams   = -32602
	codeInternal        = -32603
	codeTaskNotFound    = -32001
	codeNotCancelable   = -32002
	codeUnsupportedPart = -32005
)

// Handler serves the card and the JSON-RPC endpoint over b.
func Handler(b serve.Backend, opts Options) http.Handler {
	return &handler{b: b, opts: opts, tasks: map[string]*task{}}
}

type handler struct {
	b    serve.Backend
	opts Options

	mu    sync.Mutex
	tasks map[string]*task
	// ended holds the ids of the tasks in tasks that have ended, oldest
	// first: at most keepEnded of them stay in memory (Y37).
	ended []string
}

// keepEnded is how many ended tasks the handler keeps in memory. A
// server answers turns for as long as it runs; an older task is read
// back from its session's record when asked for.
const keepEnded = 1000

// task is what the handler knows of one turn, kept current by watch.
type task struct {
	id, session string
	turn        int
	state       string
	answer      string
	err         string
	asks        []serve.Approval
	changed     chan struct{} // closed and replaced on every change
}

// Part is a message part: text, or data (how an approval is answered and
// asked for).
type Part struct {
	Kind string          `json:"kind"`
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Message is an A2A message.
type Message struct {
	Kind      string `json:"kind"`
	Role      string `json:"role"`
	Parts     []Part `json:"parts"`
	MessageID string `json:"messageId"`
	ContextID string `json:"contextId,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
}

// Status is a task's status.
type Status struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is a task's output: the turn's answer.
type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

// Task is an A2A task: one turn of the contextId's session.
type Task struct {
	Kind      string     `json:"kind"`
	ID        string     `json:"id"`
	ContextID string     `json:"contextId"`
	Status    Status     `json:"status"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// Decision is the data part with which a client answers an
// input-required task: approve, edit (with args) or reject (with a
// reason), for one call (callId) or, without it, every pending call.
type Decision struct {
	Decision string          `json:"decision"`
	CallID   string          `json:"callId,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
	Reason   string          `json:"reason,omitempty"`
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/.well-known/agent-card.json" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(h.card(r))
	case r.URL.Path == "/a2a" && r.Method == http.MethodPost:
		h.rpc(w, r)
	default:
		w.Header().Set("Allow", "GET /.well-known/agent-card.json, POST /a2a")
		http.Error(w, "the A2A agent answers GET /.well-known/agent-card.json and POST /a2a", http.StatusMethodNotAllowed)
	}
}

// card is the agent card of A2A 0.3.0.
//
// Y30: the card lists the workflow's skills and declares the protocol
// version, JSON-RPC at /a2a, streaming, and bearer auth when a token is
// required.
func (h *handler) card(r *http.Request) map[string]any {
	info := h.b.Info()
	base := strings.TrimSuffix(h.opts.URL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	skills := []map[string]any{}
	for _, s := range info.Skills {
		tags := s.Tags
		if tags == nil {
			tags = []string{}
		}
		skills = append(skills, map[string]any{"id": s.ID, "name": s.Name, "description": s.Description, "tags": tags})
	}
	version := info.Version
	if version == "" {
		version = "0.0.0"
	}
	c := map[string]any{
		"protocolVersion":    ProtocolVersion,
		"name":               info.Name,
		"description":        info.Description,
		"version":            version,
		"url":                base + "/a2a",
		"preferredTransport": "JSONRPC",
		"capabilities":       map[string]any{"streaming": true, "pushNotifications": false},
		"defaultInputModes":  []string{"text/plain", "application/json"},
		"defaultOutputModes": []string{"text/plain", "application/json"},
		"skills":             skills,
	}
	if h.opts.Token {
		c["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}
		c["security"] = []map[string][]string{{"bearer": {}}}
	}
	return c
}

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

func errorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func reply(w http.ResponseWriter, id json.RawMessage, result any, err *rpcError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	out := map[string]any{"jsonrpc": "2.0", "id": id}
	if err != nil {
		out["error"] = err
	} else {
		out["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

type sendParams struct {
	Message       Message `json:"message"`
	Configuration struct {
		Blocking *bool `json:"blocking"`
	} `json:"configuration"`
}

type idParams struct {
	ID string `json:"id"`
}

// rpc answers one JSON-RPC request.
//
// Y31: message/send, message/stream, tasks/get and tasks/cancel are
// served; any other method is JSON-RPC's method-not-found.
func (h *handler) rpc(w http.ResponseWriter, r *http.Request) {
	var req rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		// A body cut at the server's cap is too large, not malformed: 413,
		// as the API answers it.
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("request body too large: over %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		reply(w, nil, nil, errorf(codeParse, "the body is not JSON: %v", err))
		return
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		reply(w, req.ID, nil, errorf(codeInvalidRequest, `a JSON-RPC 2.0 request needs "jsonrpc": "2.0" and a method`))
		return
	}
	switch req.Method {
	case "message/send", "message/stream":
		var p sendParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			reply(w, req.ID, nil, errorf(codeInvalidParams, "params: %v", err))
			return
		}
		t, rerr := h.send(r.Context(), p.Message)
		if rerr != nil {
			reply(w, req.ID, nil, rerr)
			return
		}
		if req.Method == "message/stream" {
			h.stream(w, r, req.ID, t)
			return
		}
		if p.Configuration.Blocking == nil || *p.Configuration.Blocking {
			h.wait(r.Context(), t)
		}
		reply(w, req.ID, h.snapshot(t), nil)
	case "tasks/get":
		t, rerr := h.lookup(r.Context(), req.Params)
		if rerr != nil {
			reply(w, req.ID, nil, rerr)
			return
		}
		reply(w, req.ID, h.snapshot(t), nil)
	case "tasks/cancel":
		t, rerr := h.lookup(r.Context(), req.Params)
		if rerr != nil {
			reply(w, req.ID, nil, rerr)
			return
		}
		if rerr := h.cancel(r.Context(), t); rerr != nil {
			reply(w, req.ID, nil, rerr)
			return
		}
		reply(w, req.ID, h.snapshot(t), nil)
	default:
		reply(w, req.ID, nil, errorf(codeMethodNotFound, "method %q: this agent serves message/send, message/stream, tasks/get and tasks/cancel", req.Method))
	}
}

func (h *handler) lookup(ctx context.Context, params json.RawMessage) (*task, *rpcError) {
	var p idParams
	if err := json.Unmarshal(params, &p); err != nil || p.ID == "" {
		return nil, errorf(codeInvalidParams, "params need the task's id")
	}
	return h.find(ctx, p.ID)
}

// find returns the task id names: from memory, or else read back from its
// session's record (an ended task the handler let go of, or one of a
// server that ran before this one).
func (h *handler) find(ctx context.Context, id string) (*task, *rpcError) {
	h.mu.Lock()
	t := h.tasks[id]
	h.mu.Unlock()
	if t != nil {
		return t, nil
	}
	t, err := h.recorded(ctx, id)
	if err != nil {
		return nil, errorf(codeInternal, "%v", err)
	}
	if t == nil {
		return nil, errorf(codeTaskNotFound, "task %s not found", id)
	}
	h.mu.Lock()
	if kept := h.tasks[id]; kept != nil {
		t = kept // another request read it back first
	} else {
		h.tasks[id] = t
		h.retire(t)
	}
	h.mu.Unlock()
	return t, nil
}

// recorded rebuilds the ended task id (SESSION:TURN) from its session's
// events: nil when the session or the turn is not there. A turn whose
// record stops before its end (its server stopped) is canceled, as the
// engine calls such a run interrupted.
//
// Y37: tasks/get answers an ended task after the handler let it go, and
// after a restart, from the session's record.
func (h *handler) recorded(ctx context.Context, id string) (*task, error) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return nil, nil
	}
	turn, err := strconv.Atoi(id[i+1:])
	if err != nil || turn < 1 {
		return nil, nil
	}
	session := id[:i]
	// Only ended turns: a running one this handler did not start (the
	// web chat's, AG-UI's) is not found here rather than waited for.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	events, err := h.b.Recorded(ctx, session, 0)
	if errors.Is(err, serve.ErrNotFound) || errors.Is(err, serve.ErrInvalid) {
		return nil, nil // no such session, or a name none can have
	}
	if err != nil {
		return nil, err
	}
	t := &task{id: id, session: session, turn: turn, changed: make(chan struct{})}
	seen := false
	for e := range events {
		if e.Turn < turn {
			continue
		}
		if e.Turn > turn || e.Type == event.RunFinished {
			if e.Type == event.RunFinished && e.Turn == turn {
				t.finish(e.Event)
			}
			break
		}
		seen = true
	}
	switch {
	case t.state != "":
		return t, nil
	case seen:
		t.state = StateCanceled
		return t, nil
	}
	return nil, nil
}

// retire notes that t has ended, letting go of the oldest ended task
// when more than keepEnded are kept. Callers hold h.mu.
func (h *handler) retire(t *task) {
	h.ended = append(h.ended, t.id)
	if len(h.ended) > keepEnded {
		delete(h.tasks, h.ended[0])
		h.ended = slices.Delete(h.ended, 0, 1)
	}
}

// send starts a turn, or answers the approvals of the input-required
// task the message names.
//
// Y32: a contextId is a session (a new one when absent) and a task one
// of its turns.
func (h *handler) send(ctx context.Context, m Message) (*task, *rpcError) {
	if m.TaskID != "" {
		t, rerr := h.find(ctx, m.TaskID)
		if rerr != nil {
			return nil, rerr
		}
		return t, h.answer(t, m)
	}
	var text []string
	for _, p := range m.Parts {
		if p.Kind == "text" {
			text = append(text, p.Text)
		}
	}
	if len(text) == 0 {
		return nil, errorf(codeUnsupportedPart, "the message has no text part; this agent reads text")
	}
	session := m.ContextID
	if session == "" {
		session = rand.Text()
	}
	info, err := h.b.Send(ctx, session, strings.Join(text, "\n"))
	switch {
	case errors.Is(err, serve.ErrBusy):
		return nil, errorf(codeInvalidRequest, "context %s has a task running; answer or cancel it first", session)
	case errors.Is(err, serve.ErrInvalid):
		return nil, errorf(codeInvalidParams, "%v", err)
	case err != nil:
		return nil, errorf(codeInternal, "%v", err)
	}
	t := &task{id: session + ":" + strconv.Itoa(info.Turn), session: session, turn: info.Turn, state: StateWorking, changed: make(chan struct{})}
	h.mu.Lock()
	h.tasks[t.id] = t
	h.mu.Unlock()
	events, err := h.b.Events(context.WithoutCancel(ctx), session, 0)
	if err != nil {
		return nil, errorf(codeInternal, "%v", err)
	}
	go h.watch(t, events)
	return t, nil
}

// answer reads a decision from m and answers t's pending approvals.
//
// Y33: an approval is the task's input-required state; the client's
// message on the task answers it with a data part {decision, callId,
// args, reason}, or the text approve or reject.
func (h *handler) answer(t *task, m Message) *rpcError {
	h.mu.Lock()
	state, asks := t.state, t.asks
	h.mu.Unlock()
	if state != StateInputRequired {
		return errorf(codeInvalidParams, "task %s is %s, not input-required; send a message without taskId to start a new task", t.id, state)
	}
	d, ok := decision(m)
	if !ok {
		return errorf(codeInvalidParams, `answer an approval with a data part {"decision": "approve"|"edit"|"reject"} or the text approve or reject`)
	}
	if d.CallID != "" && !slices.ContainsFunc(asks, func(a serve.Approval) bool { return a.CallID == d.CallID }) {
		// Else nothing is answered and the task comes back unchanged, as
		// if the answer had been taken.
		return errorf(codeInvalidParams, "no call %s waits for approval in task %s", d.CallID, t.id)
	}
	for _, a := range asks {
		if d.CallID != "" && d.CallID != a.CallID {
			continue
		}
		err := h.b.Answer(t.session, a.CallID, serve.Answer{Decision: d.Decision, Args: d.Args, Reason: d.Reason})
		switch {
		case errors.Is(err, serve.ErrInvalid):
			return errorf(codeInvalidParams, "%v", err)
		case err != nil && !errors.Is(err, serve.ErrNotFound):
			return errorf(codeInternal, "%v", err)
		}
		h.mu.Lock()
		h.answered(t, a.CallID)
		h.mu.Unlock()
	}
	return nil
}

func decision(m Message) (Decision, bool) {
	for _, p := range m.Parts {
		switch p.Kind {
		case "data":
			var d Decision
			if json.Unmarshal(p.Data, &d) == nil && d.Decision != "" {
				return d, true
			}
		case "text":
			word, rest, _ := strings.Cut(strings.TrimSpace(p.Text), " ")
			switch w := strings.ToLower(strings.TrimRight(word, ":,.")); w {
			case serve.Approve, serve.Reject:
				return Decision{Decision: w, Reason: strings.TrimSpace(rest)}, true
			}
		}
	}
	return Decision{}, false
}

// watch follows the turn's events into t until the turn ends.
func (h *handler) watch(t *task, events <-chan serve.Event) {
	for e := range events {
		if e.Turn != t.turn {
			continue
		}
		h.mu.Lock()
		switch e.Type {
		case event.ApprovalRequested:
			t.asks = append(t.asks, serve.Approval{CallID: approvalID(e.Event), Tool: e.Tool, Agent: e.Agent, Args: e.Args})
			t.state = StateInputRequired
		case event.ApprovalAnswered:
			h.answered(t, approvalID(e.Event))
		case event.RunFinished:
			t.finish(e.Event)
			h.retire(t)
		default:
			h.mu.Unlock()
			continue
		}
		close(t.changed)
		t.changed = make(chan struct{})
		h.mu.Unlock()
	}
}

// finish sets t's end from its turn's RunFinished event.
func (t *task) finish(e event.Event) {
	t.asks = nil
	t.answer, t.err = e.Answer, e.Err
	switch e.Status {
	case "finished":
		t.state = StateCompleted
	case "cancelled", "interrupted":
		t.state = StateCanceled
	default:
		t.state = StateFailed
	}
}

// answered drops call from t's asks (the answer is known before its
// event arrives, so a blocking send waits for what follows it).
func (h *handler) answered(t *task, call string) {
	for i, a := range t.asks {
		if a.CallID == call {
			t.asks = append(t.asks[:i:i], t.asks[i+1:]...)
			break
		}
	}
	if len(t.asks) == 0 && t.state == StateInputRequired {
		t.state = StateWorking
		close(t.changed)
		t.changed = make(chan struct{})
	}
}

func stopped(state string) bool {
	return state != StateWorking
}

func terminal(state string) bool {
	return state == StateCompleted || state == StateFailed || state == StateCanceled
}

// wait blocks until t leaves the working state or ctx ends.
func (h *handler) wait(ctx context.Context, t *task) {
	for {
		h.mu.Lock()
		state, ch := t.state, t.changed
		h.mu.Unlock()
		if stopped(state) {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// cancel stops t's turn and waits for it to end.
//
// Y34: tasks/cancel stops the turn and answers the canceled task; a task
// already ended is TaskNotCancelableError.
func (h *handler) cancel(ctx context.Context, t *task) *rpcError {
	h.mu.Lock()
	state := t.state
	h.mu.Unlock()
	if terminal(state) {
		return errorf(codeNotCancelable, "task %s is already %s", t.id, state)
	}
	if err := h.b.Cancel(t.session); err != nil && !errors.Is(err, serve.ErrNotFound) {
		return errorf(codeInternal, "%v", err)
	}
	for {
		h.mu.Lock()
		state, ch := t.state, t.changed
		h.mu.Unlock()
		if terminal(state) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return errorf(codeInternal, "the request ended before the turn stopped")
		}
	}
}

// snapshot is t as an A2A Task.
func (h *handler) snapshot(t *task) Task {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := Task{Kind: "task", ID: t.id, ContextID: t.session, Status: h.status(t)}
	if t.state == StateCompleted {
		out.Artifacts = []Artifact{h.artifact(t)}
	}
	return out
}

func (h *handler) artifact(t *task) Artifact {
	return Artifact{ArtifactID: t.id + ":answer", Name: "answer", Parts: []Part{{Kind: "text", Text: t.answer}}}
}

// status is t's status; its message says what input-required waits for
// (a data part per call: callId, tool, agent, args) or why a task failed.
func (h *handler) status(t *task) Status {
	s := Status{State: t.state, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}
	msg := func(parts ...Part) *Message {
		return &Message{Kind: "message", Role: "agent", Parts: parts, MessageID: rand.Text(), ContextID: t.session, TaskID: t.id}
	}
	switch t.state {
	case StateInputRequired:
		var parts []Part
		for _, a := range t.asks {
			d, _ := json.Marshal(map[string]any{"callId": a.CallID, "tool": a.Tool, "agent": a.Agent, "args": a.Args})
			parts = append(parts, Part{Kind: "text", Text: fmt.Sprintf("%s wants to call %s; approve or reject it", cmp.Or(a.Agent, "host"), a.Tool)}, Part{Kind: "data", Data: d})
		}
		s.Message = msg(parts...)
	case StateCompleted:
		s.Message = msg(Part{Kind: "text", Text: t.answer})
	case StateFailed:
		s.Message = msg(Part{Kind: "text", Text: t.err})
	}
	return s
}

// stream answers message/stream: the task, then a status-update at every
// change, the answer as an artifact-update, and the last status-update
// final when the task ends or needs input.
//
// Y35: message/stream's last event is final, at input-required or a
// terminal state.
func (h *handler) stream(w http.ResponseWriter, r *http.Request, id json.RawMessage, t *task) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	emit := func(result any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	emit(h.snapshot(t))
	seen := ""
	for {
		h.mu.Lock()
		state, ch := t.state, t.changed
		var st Status
		var art Artifact
		if state != seen {
			st, art = h.status(t), h.artifact(t)
		}
		h.mu.Unlock()
		if state != seen {
			seen = state
			if state == StateCompleted {
				emit(map[string]any{"kind": "artifact-update", "taskId": t.id, "contextId": t.session, "artifact": art, "lastChunk": true})
			}
			emit(map[string]any{"kind": "status-update", "taskId": t.id, "contextId": t.session, "status": st, "final": stopped(state)})
			if stopped(state) {
				return
			}
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
}

// approvalID is the id an approval's answer takes: the engine names it
// in Approval, which need not be the model's call id.
func approvalID(e event.Event) string {
	if e.Approval != "" {
		return e.Approval
	}
	return e.CallID
}
