package mcptool

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsdrun/fsd/tool"
)

// inflight are the calls a server is answering now, by progress token:
// what the server's notifications and requests during a call reach.
type inflight struct {
	next  int
	hooks map[string]tool.Hooks
	order []string // tokens, oldest first
}

// begin registers a call's hooks and returns its progress token and the
// function that forgets it.
func (s *server) begin(h tool.Hooks) (token string, end func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.next++
	token = fmt.Sprintf("fsd-%d", s.calls.next)
	if s.calls.hooks == nil {
		s.calls.hooks = map[string]tool.Hooks{}
	}
	s.calls.hooks[token] = h
	s.calls.order = append(s.calls.order, token)
	return token, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.calls.hooks, token)
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
	h, ok := s.calls.hooks[t]
	return h, ok
}

// current is the hooks of the call a server's own request (elicitation,
// sampling) is made for. MCP does not say which call a request serves;
// every call of a server belongs to the same skill, so the most recent
// call in flight stands for them — on a server that answers one call at a
// time, the call that asks.
func (s *server) current() (tool.Hooks, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.calls.order); n > 0 {
		return s.calls.hooks[s.calls.order[n-1]], true
	}
	return tool.Hooks{}, false
}

// progress passes a server's progress notification to the call it is
// about; one for a call no longer in flight is dropped.
//
// P1: a server's progress reaches the call it is about.
func (s *server) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	h, ok := s.hooksOf(req.Params.ProgressToken)
	if !ok || h.Progress == nil {
		return
	}
	h.Progress(tool.Progress{Done: req.Params.Progress, Total: req.Params.Total, Message: s.pool.mask(req.Params.Message)})
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
// has a workspace, and the handlers of the server's notifications.
func (s *server) clientOptions() *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{}
	if len(s.roots()) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	return &mcp.ClientOptions{Capabilities: caps, ProgressNotificationHandler: s.progress}
}
