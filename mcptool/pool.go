package mcptool

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/internal/sandbox"
	"github.com/fsdrun/fsd/spec"
)

// Defaults, stated in docs/mcp.md.
const (
	// DefaultTimeout bounds one call when the server sets no timeout.
	DefaultTimeout = spec.DefaultMCPTimeout
	// DefaultIdle is how long a server of an unloaded skill stays up in
	// case the skill is read again.
	DefaultIdle = time.Minute
	// DefaultStartTimeout bounds starting a server, its handshake and
	// listing its tools (a `go run` server may compile first).
	DefaultStartTimeout = 2 * time.Minute
	// MaxResultBytes bounds a result's text; the rest is dropped and marked.
	MaxResultBytes = 1 << 20
	stderrTail     = 4 << 10
	terminateAfter = time.Second
)

// Spooler keeps bytes as an artifact of a skill and returns its handle
// (artifact.Store.Keep).
type Spooler interface {
	Keep(skillID, name string, data []byte) (string, error)
}

// Options configure a Pool. The zero value works: every skill trusted,
// the process environment, DefaultIdle.
type Options struct {
	// Trusted says whether a skill may start programs; nil trusts all.
	Trusted func(*spec.Skill) bool
	// LookupEnv is where env: names and header variables are read; nil is
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Idle is how long an unused server stays up; 0 is DefaultIdle and a
	// negative value closes it as soon as nothing uses it.
	Idle time.Duration
	// StartTimeout bounds connecting and listing; 0 is DefaultStartTimeout.
	StartTimeout time.Duration
	// Spool keeps images and embedded resources; nil describes them only.
	Spool Spooler
	// Transport is the HTTP transport for url servers; nil is
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Logger gets debug logs.
	Logger zerolog.Logger
	// Mask takes secrets out of what the pool logs (a server's stderr
	// may print what it was given); nil logs as is.
	Mask func(string) string
	// Version is fsd's version, sent in the MCP handshake.
	Version string
	// Unavailable is told of each server Acquire could not use (it did
	// not start, connect or list its tools); nil: only the notes say so.
	// A strict run fails on it.
	Unavailable func(s *spec.Skill, server string, err error)
	// Workspace is the run's workspace folder, asked when a stdio server
	// starts: its working folder unless its cwd: names one of the
	// skill's. nil or "": the skill's folder.
	Workspace func() string
	// Sandbox is the sandbox of a stdio server (the engine's
	// spec.SandboxFor with the run's workspace); a nil result runs it
	// unconfined, which only a workflow's `sandbox: off` asks for. A nil
	// Sandbox gives every server the default sandbox: no network, writes
	// only to the workspace and its private /tmp, its skill's folder
	// readable.
	Sandbox func(*spec.Skill, *spec.MCPServer) *sandbox.Policy
	// Wrap replaces how the sandbox is applied (sandbox.Wrap); tests pass
	// one that fails, to see a machine without a sandbox.
	Wrap proc.Wrap
}

// sandboxFor is the sandbox of skill s's stdio server m; dir is the
// skill's folder, absolute.
func (p *Pool) sandboxFor(s *spec.Skill, m *spec.MCPServer, dir string) *sandbox.Policy {
	if p.sandbox == nil {
		return &sandbox.Policy{Network: sandbox.NetOff, Workspace: p.workspace(), Read: []string{dir}}
	}
	return p.sandbox(s, m)
}

// Pool owns a run's MCP sessions. It is safe for concurrent use; Close it
// when the run ends.
type Pool struct {
	trusted      func(*spec.Skill) bool
	lookupEnv    func(string) (string, bool)
	idle         time.Duration
	startTimeout time.Duration
	spool        Spooler
	transport    http.RoundTripper
	log          zerolog.Logger
	version      string
	mask         func(string) string
	unavailable  func(*spec.Skill, string, error)
	workspace    func() string
	sandbox      func(*spec.Skill, *spec.MCPServer) *sandbox.Policy
	wrap         proc.Wrap

	mu      sync.Mutex
	servers map[key]*server
	closed  bool
}

type key struct {
	skill  *spec.Skill // one manifest version: a reload gets new servers
	server string
}

// NewPool returns an empty pool.
func NewPool(o Options) *Pool {
	p := &Pool{trusted: o.Trusted, lookupEnv: o.LookupEnv, idle: o.Idle, startTimeout: o.StartTimeout,
		spool: o.Spool, transport: o.Transport, log: o.Logger, version: o.Version, mask: o.Mask, unavailable: o.Unavailable, workspace: o.Workspace,
		sandbox: o.Sandbox, wrap: o.Wrap, servers: map[key]*server{}}
	if p.mask == nil {
		p.mask = func(s string) string { return s }
	}
	if p.trusted == nil {
		p.trusted = func(*spec.Skill) bool { return true }
	}
	if p.unavailable == nil {
		p.unavailable = func(*spec.Skill, string, error) {}
	}
	if p.lookupEnv == nil {
		p.lookupEnv = os.LookupEnv
	}
	if p.idle == 0 {
		p.idle = DefaultIdle
	}
	if p.startTimeout <= 0 {
		p.startTimeout = DefaultStartTimeout
	}
	if p.transport == nil {
		p.transport = http.DefaultTransport
	}
	if p.version == "" {
		p.version = "dev"
	}
	if p.workspace == nil {
		p.workspace = func() string { return "" }
	}
	return p
}

// Acquire marks the skill's servers in use, connects those not connected
// (starting stdio programs) and lists their tools: call it once per load
// (or per task of the skill's agents), and Release when the load ends.
// notes say, for the model and the user, which servers could not be used
// and why, which tools were dropped as over a manifest tool's size limits,
// and which allowlisted tools a server does not offer; the other servers'
// tools, and a server's other tools, are still returned.
func (p *Pool) Acquire(ctx context.Context, s *spec.Skill) (tools []*Tool, notes []string) {
	for i := range s.MCP {
		cfg := &s.MCP[i]
		srv, err := p.server(s, cfg)
		if err != nil {
			notes = append(notes, fmt.Sprintf("MCP server %s: %v", cfg.Name, err))
			continue
		}
		ts, listNotes, err := srv.list(ctx)
		if err != nil {
			p.log.Warn().Str("skill", s.ID).Str("server", cfg.Name).Str("error", p.mask(err.Error())).Msg("MCP server unavailable")
			p.unavailable(s, cfg.Name, err)
			notes = append(notes, fmt.Sprintf("MCP server %s is unavailable, its tools are not offered: %v", cfg.Name, err))
			continue
		}
		tools = append(tools, ts...)
		notes = append(notes, listNotes...)
	}
	return tools, notes
}

// Release ends one use of the skill's servers; a server nothing uses
// closes after the idle time.
func (p *Pool) Release(s *spec.Skill) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range s.MCP {
		srv, ok := p.servers[key{s, s.MCP[i].Name}]
		if !ok {
			continue
		}
		srv.mu.Lock()
		if srv.refs > 0 {
			srv.refs--
		}
		if srv.refs == 0 && srv.sess != nil && srv.idle == nil {
			if p.idle < 0 {
				go srv.close()
			} else {
				srv.idle = time.AfterFunc(p.idle, srv.closeIdle)
			}
		}
		srv.mu.Unlock()
	}
}

// closeIdle closes the server if it is still unused when its timer fires.
func (s *server) closeIdle() {
	s.mu.Lock()
	unused := s.refs == 0
	s.idle = nil
	s.mu.Unlock()
	if unused {
		s.pool.log.Debug().Str("skill", s.skill.ID).Str("server", s.cfg.Name).Msg("closing idle MCP server")
		s.close()
	}
}

// server returns the pool's server for (skill, cfg), counting one more use.
func (p *Pool) server(s *spec.Skill, cfg *spec.MCPServer) (*server, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("the run is over")
	}
	k := key{s, cfg.Name}
	srv, ok := p.servers[k]
	if !ok {
		srv = &server{pool: p, skill: s, cfg: cfg}
		p.servers[k] = srv
	}
	srv.mu.Lock()
	srv.refs++
	if srv.idle != nil {
		srv.idle.Stop()
		srv.idle = nil
	}
	srv.mu.Unlock()
	return srv, nil
}

// Close ends every session and stops every server; later Acquires fail.
// A nil Pool has nothing to close.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	all := make([]*server, 0, len(p.servers))
	for _, srv := range p.servers {
		all = append(all, srv)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, srv := range all {
		srv.mu.Lock()
		srv.closed = true
		srv.mu.Unlock()
		wg.Go(srv.close)
	}
	wg.Wait()
}

// Stats are a server's counters, for tests and logs.
type Stats struct {
	Starts    int  // sessions started so far
	Connected bool // a session is open now
	Users     int  // loads and tasks using it now
}

// Stats returns the counters of a skill's server.
func (p *Pool) Stats(s *spec.Skill, server string) Stats {
	p.mu.Lock()
	srv, ok := p.servers[key{s, server}]
	p.mu.Unlock()
	if !ok {
		return Stats{}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return Stats{Starts: srv.starts, Connected: srv.sess != nil, Users: srv.refs}
}

// notOffered is the allowlist's names that are not among the tools the
// server listed.
func notOffered(cfg *spec.MCPServer, listed map[string]bool) []string {
	if cfg.Tools == nil {
		return nil
	}
	var out []string
	for _, n := range cfg.Tools {
		if !listed[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
