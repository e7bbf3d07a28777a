package mcpserve

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsdrun/fsd/event"
)

// Runner runs the workflow once for one call: input is the caller's
// ("" means the workflow's own input); every event of the run goes to
// sink. It returns the final answer.
type Runner func(ctx context.Context, input string, sink event.Sink) (answer string, err error)

// Options describe the served workflow.
type Options struct {
	// Tool is the tool's name (see ToolName); Description what it does.
	Tool, Description string
	// Version is fsd's version, sent in the handshake.
	Version string
	Run     Runner
}

// Input is the tool's argument.
type Input struct {
	Input string `json:"input,omitempty" jsonschema:"the task for the workflow, as a user would write it; omit to use the workflow's own input"`
}

// NewServer returns an MCP server with the workflow's tool.
func NewServer(o Options) *mcp.Server {
	v := o.Version
	if v == "" {
		v = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "fsd", Version: v}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: o.Tool, Description: o.Description},
		func(ctx context.Context, req *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, any, error) {
			p := &progress{ctx: ctx}
			if req.Params != nil && req.Session != nil {
				p.token, p.session = req.Params.GetProgressToken(), req.Session
			}
			answer, err := o.Run(ctx, in.Input, p)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil, nil
		})
	return s
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

// progress turns board events into progress notifications: progress is
// the number of tasks finished, total the number known so far, so the
// value only grows, as MCP requires.
type progress struct {
	ctx     context.Context
	token   any
	session *mcp.ServerSession

	mu          sync.Mutex
	done, total int
}

func (p *progress) Emit(e event.Event) {
	if p.token == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var msg string
	switch e.Type {
	case event.TaskAdded:
		p.total++
		return
	case event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		p.done++
		who := e.Task
		if e.Agent != "" {
			who += " (" + e.Agent + ")"
		}
		msg = fmt.Sprintf("task %s %s", who, strings.TrimPrefix(e.Type, "task."))
	default:
		return
	}
	// A client that went away must not stop the run: errors are dropped.
	_ = p.session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token, Progress: float64(p.done), Total: float64(max(p.total, p.done)), Message: msg,
	})
}
