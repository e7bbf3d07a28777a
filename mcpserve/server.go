package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

// Runner runs the workflow once for one call: input is the caller's
// ("" means the workflow's own input); every event of the run goes to
// sink. It returns the final answer. Once its run exists it calls
// BindAnswer with ctx, so the server can answer the run's approvals.
type Runner func(ctx context.Context, input string, sink event.Sink) (answer string, err error)

// Options describe the served workflow.
type Options struct {
	// Tool is the tool's name (see ToolName); Description what it does.
	Tool, Description string
	// Version is fsd's version, sent in the handshake.
	Version string
	Run     Runner
	// Annotations are the tool's hints (read-only, destructive): what the
	// workflow's tools may do. nil sends none.
	Annotations *mcp.ToolAnnotations
	// Tasks are the output schemas of the typed results a run may have, by
	// task id (the static tasks whose agents declare output:): the
	// tool's outputSchema describes them under "tasks".
	Tasks map[string]any
}

// Input is the tool's argument.
type Input struct {
	Input string `json:"input,omitempty" jsonschema:"the task for the workflow, as a user would write it; omit to use the workflow's own input"`
}

// Output is the tool's structured result (structuredContent): the run's
// answer, its id, and the typed results of its tasks by task id.
type Output struct {
	Answer string                     `json:"answer"`
	Run    string                     `json:"run"`
	Tasks  map[string]json.RawMessage `json:"tasks,omitempty"`
}

var inputSchema = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"the task for the workflow, as a user would write it; omit to use the workflow's own input"}},"additionalProperties":false}`)

// outputSchema is Output's JSON Schema, with the typed tasks' schemas.
//
// P8: the tool's outputSchema describes every structured result.
func outputSchema(tasks map[string]any) map[string]any {
	ts := map[string]any{"type": "object", "description": "the typed results of the run's tasks, by task id"}
	if len(tasks) > 0 {
		ts["properties"] = tasks
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer": map[string]any{"type": "string", "description": "the run's final answer"},
			"run":    map[string]any{"type": "string", "description": "the run's id (fsd show RUN)"},
			"tasks":  ts,
		},
		"required": []string{"answer", "run"},
	}
}

// NewServer returns an MCP server with the workflow's tool.
func NewServer(o Options) *mcp.Server {
	v := o.Version
	if v == "" {
		v = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "fsd", Version: v}, nil)
	t := &mcp.Tool{Name: o.Tool, Description: o.Description, InputSchema: inputSchema, OutputSchema: outputSchema(o.Tasks), Annotations: o.Annotations}
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in Input
		if args := req.Params.Arguments; len(args) > 0 {
			// The input schema allows no other key: one the caller meant
			// (a typo of input) would be dropped unread.
			dec := json.NewDecoder(bytes.NewReader(args))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				why := err.Error()
				var wrong *json.UnmarshalTypeError
				if errors.As(err, &wrong) {
					why = fmt.Sprintf("%s is %s, want a string", wrong.Field, jsonKind(wrong.Value))
					if wrong.Field == "" {
						// The arguments themselves are not an object (an
						// array, a string): there is no field to name.
						why = fmt.Sprintf("the arguments are %s, want an object", jsonKind(wrong.Value))
					}
				}
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "arguments must be {\"input\": \"...\"}: " + why}}}, nil
			}
		}
		ctx = callerTrace(ctx, req)
		c := &callSink{ctx: ctx, session: req.Session, outputs: map[string]json.RawMessage{}}
		if req.Params != nil {
			c.token = req.Params.GetProgressToken()
		}
		ctx = context.WithValue(ctx, bindKey{}, c)
		answer, err := o.Run(ctx, in.Input, c)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		out := c.output(answer)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}, StructuredContent: out}, nil
	})
	return s
}

// jsonKind is a JSON value's kind as encoding/json names it ("array",
// "number"), with its article.
func jsonKind(kind string) string {
	if strings.HasPrefix(kind, "a") || strings.HasPrefix(kind, "o") {
		return "an " + kind
	}
	return "a " + kind
}

type bindKey struct{}

// BindAnswer tells the server of the call ctx serves how to answer a call
// of its run that waits for approval (engine.Run.Answer). A Runner calls
// it once its run exists; outside a served call it does nothing.
func BindAnswer(ctx context.Context, answer func(runrecord.Answer) error) {
	if c, ok := ctx.Value(bindKey{}).(*callSink); ok {
		c.mu.Lock()
		c.answer = answer
		c.mu.Unlock()
	}
}

// callerTrace joins the caller's trace, so the run's spans nest under
// the caller's: the W3C trace context in the call's _meta (traceparent,
// tracestate, where MCP clients put it), else in the headers of the HTTP
// request that carried the call.
func callerTrace(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	tc := propagation.TraceContext{}
	if req.Params != nil {
		m := propagation.MapCarrier{}
		for _, k := range tc.Fields() {
			if v, ok := req.Params.Meta[k].(string); ok {
				m[k] = v
			}
		}
		if m["traceparent"] != "" {
			return tc.Extract(ctx, m)
		}
	}
	if req.Extra != nil && req.Extra.Header != nil {
		return tc.Extract(ctx, propagation.HeaderCarrier(req.Extra.Header))
	}
	return ctx
}

// ToolName makes a tool name from a workflow's name: MCP allows a-z, A-Z,
// 0-9, _, - and . (1-128 characters); anything else becomes _.
func ToolName(workflow string) string {
	var b strings.Builder
	for _, r := range workflow {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := strings.Trim(b.String(), "_")
	if name == "" {
		return "run_workflow"
	}
	return name[:min(len(name), 64)]
}

// callSink hears one call's run: board events become progress
// notifications (progress the number of tasks finished, total the number
// known so far, so the value only grows, as MCP requires), typed task
// results are kept for the structured result, and a call waiting for
// approval is put to the client (approve).
type callSink struct {
	ctx     context.Context
	token   any
	session *mcp.ServerSession

	mu          sync.Mutex
	done, total int
	run         string
	outputs     map[string]json.RawMessage
	answer      func(runrecord.Answer) error
}

func (p *callSink) Emit(e event.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run == "" {
		p.run = e.Run
	}
	var msg string
	switch e.Type {
	case event.TaskAdded:
		p.total++
		return
	case event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		p.done++
		if e.Type == event.TaskCompleted && len(e.Output) > 0 {
			p.outputs[e.Task] = e.Output
		}
		who := e.Task
		if e.Agent != "" {
			who += " (" + e.Agent + ")"
		}
		msg = fmt.Sprintf("task %s %s", who, strings.TrimPrefix(e.Type, "task."))
	case event.ApprovalRequested:
		// Not from inside the event: the run's gate is sending it.
		go p.approve(e)
		return
	default:
		return
	}
	p.notify(msg)
}

// notify sends a progress notification; the caller holds p.mu. A client
// that went away must not stop the run: errors are dropped.
func (p *callSink) notify(msg string) {
	if p.token == nil || p.session == nil {
		return
	}
	_ = p.session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token, Progress: float64(p.done), Total: float64(max(p.total, p.done)), Message: msg,
	})
}

// output is the call's structured result.
func (p *callSink) output(answer string) Output {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := Output{Answer: answer, Run: p.run}
	if len(p.outputs) > 0 {
		o.Tasks = p.outputs
	}
	return o
}

// approvalForm is the form a client's person answers a call waiting for
// approval with.
var approvalForm = json.RawMessage(`{"type":"object","properties":{` +
	`"decision":{"type":"string","title":"Decision","enum":["approve","reject"],"default":"approve"},` +
	`"reason":{"type":"string","title":"Reason","description":"why, when rejecting: the model reads it"}},"required":["decision"]}`)

// approve puts a call waiting for approval to the client's person
// through elicitation, when the client takes it and the run can be
// answered from here; otherwise — or when the client cancels — a progress
// message says how to answer it with fsd approve. A decline rejects.
//
// P6: a call waiting for approval is put to the MCP client.
func (p *callSink) approve(e event.Event) {
	p.mu.Lock()
	answer := p.answer
	p.mu.Unlock()
	who := "the host"
	if e.Task != "" {
		who = fmt.Sprintf("task %s (%s)", e.Task, e.Agent)
	}
	if answer != nil && p.session != nil && elicits(p.session) {
		msg := fmt.Sprintf("fsd: %s wants to call %s %s (call %s of run %s). Approve it?", who, e.Tool, clip(string(e.Args), 500), e.Approval, e.Run)
		res, err := p.session.Elicit(p.ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: approvalForm})
		if err == nil && res.Action != "cancel" {
			a := runrecord.Answer{Call: e.Approval, Decision: runrecord.Approved, By: "mcp client"}
			if res.Action == "decline" || res.Content["decision"] == "reject" {
				a.Decision, a.Reason = runrecord.Rejected, "rejected by the MCP client's user"
				if r, _ := res.Content["reason"].(string); r != "" {
					a.Reason = r
				}
			}
			if answer(a) == nil {
				return
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify(fmt.Sprintf("waiting for approval: %s calls %s; answer with: fsd approve %s %s [--edit JSON | --reject REASON]", who, e.Tool, e.Run, e.Approval))
}

// elicits reports whether the client takes form elicitation.
func elicits(s *mcp.ServerSession) bool {
	ip := s.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
