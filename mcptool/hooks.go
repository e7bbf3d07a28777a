package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/tool"
)

// inflight are the calls a server is answering now, by progress token:
// what the server's notifications and requests during a call reach.
type inflight struct {
	next  int
	calls map[string]inCall
	order []string // tokens, oldest first
}

// inCall is one call in flight: its hooks, and its context, which bounds
// what the server asks during it.
type inCall struct {
	hooks tool.Hooks
	ctx   context.Context
}

// begin registers a call's hooks and returns its progress token and the
// function that forgets it.
func (s *server) begin(ctx context.Context, h tool.Hooks) (token string, end func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.next++
	token = fmt.Sprintf("fsd-%d", s.calls.next)
	if s.calls.calls == nil {
		s.calls.calls = map[string]inCall{}
	}
	s.calls.calls[token] = inCall{hooks: h, ctx: ctx}
	s.calls.order = append(s.calls.order, token)
	return token, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.calls.calls, token)
		for i, t := range s.calls.order {
			if t == token {
				s.calls.order = append(s.calls.order[:i], s.calls.order[i+1:]...)
				break
			}
		}
	}
}

// hooksOf is the hooks of the call a progress token names.
func (s *server) hooksOf(token any) (tool.Hooks, bool) {
	t, ok := token.(string)
	if !ok {
		return tool.Hooks{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.calls.calls[t]
	return c.hooks, ok
}

// current is the hooks of the call a server's own request (elicitation,
// sampling) is made for. MCP does not say which call a request serves;
// every call of a server belongs to the same skill, so the most recent
// call in flight stands for them — on a server that answers one call at a
// time, the call that asks.
func (s *server) current() (inCall, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.calls.order); n > 0 {
		return s.calls.calls[s.calls.order[n-1]], true
	}
	return inCall{}, false
}

// elicit puts a server's question (elicitation/create, form mode) to the
// person running the call it serves, through the call's Ask hook — the
// run's approval machinery — and answers what they said. A question
// outside any call, or in a run that cannot ask, is declined; a URL-mode
// request too (fsd opens no browser).
//
// P5: a server's question waits for a person like an approval.
func (s *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	c, ok := s.current()
	if !ok || c.hooks.Ask == nil || req.Params == nil || req.Params.Mode == "url" {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	schema, err := json.Marshal(req.Params.RequestedSchema)
	if err != nil || req.Params.RequestedSchema == nil {
		schema = []byte(`{"type":"object"}`)
	}
	// The call's context bounds the wait: a call that timed out or was
	// cancelled asks nobody any longer.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	ans, err := c.hooks.Ask(ctx, tool.Question{Message: s.pool.mask(req.Params.Message), Schema: schema})
	if err != nil {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return &mcp.ElicitResult{Action: ans.Action, Content: ans.Content}, nil
}

// progress passes a server's progress notification to the call it is
// about, as the connection reads it; one for a call no longer in flight
// is dropped.
//
// P1: a server's progress reaches the call it is about.
func (s *server) progress(p *mcp.ProgressNotificationParams) {
	h, ok := s.hooksOf(p.ProgressToken)
	if !ok || h.Progress == nil {
		return
	}
	h.Progress(tool.Progress{Done: p.Progress, Total: p.Total, Message: s.pool.mask(p.Message)})
}

// taskStatus reports a task's status to the call it runs as a progress
// report: the nth status the task reported, with what it said.
//
// P10: a task's status reaches the call like a progress notification.
func (s *server) taskStatus(token any, t taskState, n int) {
	h, ok := s.hooksOf(token)
	if !ok || h.Progress == nil {
		return
	}
	msg := "task " + strings.ReplaceAll(t.Status, "_", " ")
	if t.StatusMessage != "" {
		msg += ": " + t.StatusMessage
	}
	h.Progress(tool.Progress{Done: float64(n), Message: s.pool.mask(msg)})
}

// roots are the folders a server may work in: the run's workspace.
//
// P4: the workspace is the only root.
func (s *server) roots() []*mcp.Root {
	dir := s.pool.workspace()
	if dir == "" {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return []*mcp.Root{{URI: u.String(), Name: "workspace"}}
}

// clientOptions are what fsd's client offers a server: roots when the run
// has a workspace, and the handlers of the server's requests (progress
// notifications are taken by the connection, taskConn.intercept).
func (s *server) clientOptions() *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{}
	if len(s.roots()) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	return &mcp.ClientOptions{Capabilities: caps, ElicitationHandler: s.elicit, CreateMessageHandler: s.sample}
}

// sample answers a server's request for a completion (sampling) with the
// run's model, through the call's Sample hook: the run approves it and
// counts it against its budget. Text, image and audio messages are passed
// on; a request outside any call, or in a run that does not sample, is
// refused.
//
// P9: a server's completion is the run's model's, approved and counted.
func (s *server) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c, ok := s.current()
	if !ok || c.hooks.Sample == nil || req.Params == nil {
		return nil, refused(errors.New("fsd samples only during a call, with the run's model"))
	}
	// The server's maxTokens bounds the answer, as the protocol asks.
	mr := &model.Request{Context: req.Params.SystemPrompt, MaxTokens: int(req.Params.MaxTokens)}
	for _, m := range req.Params.Messages {
		if m == nil {
			continue
		}
		msg := model.Message{Role: model.User}
		if m.Role == "assistant" {
			msg.Role = model.Assistant
		}
		switch ct := m.Content.(type) {
		case *mcp.TextContent:
			msg.Text = ct.Text
		case *mcp.ImageContent:
			msg.Media = []model.Media{{MIME: ct.MIMEType, Data: ct.Data}}
		case *mcp.AudioContent:
			msg.Media = []model.Media{{MIME: ct.MIMEType, Data: ct.Data}}
		default:
			return nil, refused(fmt.Errorf("fsd does not sample with content of type %T", ct))
		}
		mr.Messages = append(mr.Messages, msg)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	resp, err := c.hooks.Sample(ctx, mr)
	if err != nil {
		return nil, refused(err)
	}
	name := resp.Model
	if name == "" {
		name = "fsd"
	}
	return &mcp.CreateMessageResult{Role: "assistant", Model: name, Content: &mcp.TextContent{Text: resp.Text}, StopReason: "endTurn"}, nil
}

// refused is a sampling request's refusal as the protocol's error (code
// -1, the user rejected it): the server reads why, and the session, which
// is fine, stays.
func refused(err error) error {
	return &jsonrpc.Error{Code: -1, Message: "sampling refused: " + err.Error()}
}
