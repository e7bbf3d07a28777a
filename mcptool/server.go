package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/spec"
)

// server is one MCP server of one loaded skill version: its session while
// connected, and how many loads and tasks use it.
type server struct {
	pool  *Pool
	skill *spec.Skill
	cfg   *spec.MCPServer

	mu     sync.Mutex
	sess   *mcp.ClientSession
	cmd    *proc.Cmd   // stdio only
	stderr *proc.Tail  // stdio only: the end of what the server printed
	exit   string      // why the last session ended, for the next error
	refs   int         // loads and tasks using the server
	idle   *time.Timer // closes the server once nothing uses it
	closed bool        // the pool is closed: no new sessions
	starts int         // sessions started, for tests
	calls  inflight    // calls in flight, for the server's notifications and requests
	// protocol is the protocol version the server agreed to, for the
	// Streamable HTTP header.
	protocol atomicString
	// kinds are its tools that require tasks, known across sessions.
	kinds *taskKinds
}

// atomicString is a string read and written from several goroutines.
type atomicString struct{ v atomic.Value }

func (a *atomicString) Store(s string) { a.v.Store(s) }

func (a *atomicString) Load() string { s, _ := a.v.Load().(string); return s }

func (s *server) who() string {
	return fmt.Sprintf("MCP server %s of skill %s", s.cfg.Name, s.skill.ID)
}

func (s *server) callTimeout() time.Duration {
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return DefaultTimeout
}

// session returns the live session, starting or connecting the server if
// there is none (first use, or it died since).
func (s *server) session(ctx context.Context) (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the run is over")
	}
	if s.sess != nil {
		return s.sess, nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.pool.startTimeout)
	defer cancel()
	var t mcp.Transport
	if s.cfg.Stdio() {
		ct, err := s.command()
		if err != nil {
			return nil, err
		}
		t = ct
	} else {
		ht, err := s.http()
		if err != nil {
			return nil, err
		}
		t = ht
	}
	if s.kinds == nil {
		s.kinds = newTaskKinds()
	}
	t = taskTransport{Transport: t, status: s.taskStatus, progress: s.progress, protocol: s.protocol.Store, kinds: s.kinds}
	client := mcp.NewClient(&mcp.Implementation{Name: "fsd", Version: s.pool.version}, s.clientOptions())
	if roots := s.roots(); len(roots) > 0 {
		client.AddRoots(roots...)
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		if s.cmd != nil {
			proc.KillGroup(s.cmd.Cmd)
			_ = s.cmd.Wait()
			s.cmd.Cleanup()
			err = withStderr(err, s.stderr)
		}
		switch {
		case parent.Err() != nil:
			// The run was cancelled (a signal, its timeout): the
			// server's start timeout did not run out.
			err = fmt.Errorf("cancelled while starting: %w", context.Cause(parent))
		case ctx.Err() != nil:
			err = fmt.Errorf("did not answer within %s: %w", s.pool.startTimeout, err)
		}
		return nil, err
	}
	s.starts++
	s.sess = cs
	s.exit = ""
	go s.watch(cs, s.cmd)
	return cs, nil
}

// watch notices a session ending on the server's side (a stdio server
// exiting, an HTTP session dropped), so the next call starts a new one.
func (s *server) watch(cs *mcp.ClientSession, cmd *proc.Cmd) {
	_ = cs.Wait()
	err := cs.Close() // reaps a stdio server: its exit status
	if cmd != nil {
		proc.KillGroup(cmd.Cmd)
		// Reaped: what its sandbox held can go.
		cmd.Cleanup()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != cs {
		return // closed by us
	}
	s.sess = nil
	s.exit = "the connection closed"
	if err != nil {
		s.exit = err.Error()
	}
	if cmd != nil {
		s.exit = withStderr(errors.New(s.exit), s.stderr).Error()
	}
}

// dropped ends a session a call found broken and says why.
func (s *server) dropped(cs *mcp.ClientSession) string {
	s.mu.Lock()
	mine := s.sess == cs
	if mine {
		s.sess = nil
	}
	cmd, stderr := s.cmd, s.stderr
	s.mu.Unlock()
	if !mine {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.exit // watch (or a concurrent call) got there first
	}
	exit := "the connection closed"
	if err := cs.Close(); err != nil {
		exit = err.Error()
	}
	if cmd != nil {
		proc.KillGroup(cmd.Cmd)
		exit = withStderr(errors.New(exit), stderr).Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exit = exit
	return exit
}

// command prepares a stdio server's process: argv without a shell, in the
// run's workspace (or cwd inside the skill's folder; without a
// workspace, the skill's folder), with the minimal environment and the
// skill's folder as SKILL_DIR. An untrusted skill's server never starts.
//
// T4: an untrusted skill's stdio server never starts.
func (s *server) command() (*mcp.CommandTransport, error) {
	dir, err := filepath.Abs(s.skill.Dir)
	if err != nil {
		return nil, err
	}
	if !s.pool.trusted(s.skill) {
		return nil, fmt.Errorf("not started: the skill's folder %s is not trusted to run commands. "+
			"Only skills under the workflow's folder or a --trust folder may; to allow this one, run fsd with --trust %s", dir, dir)
	}
	argv, set, err := s.expanded()
	if err != nil {
		return nil, err
	}
	p := proc.Program{Argv: argv, Root: dir, Dir: s.pool.workspace(), Env: s.cfg.Env, LookupEnv: s.pool.lookupEnv,
		Set: append([]string{"SKILL_DIR=" + dir}, set...), Sandbox: s.pool.sandboxFor(s.skill, s.cfg, dir), Wrap: s.pool.wrap}
	if s.cfg.Cwd != "" {
		p.Dir = filepath.Join(dir, filepath.FromSlash(s.cfg.Cwd))
	}
	// The server outlives the call that starts it: no context ends it,
	// close and watch kill its group.
	cmd, err := proc.Command(context.Background(), p)
	if err != nil {
		return nil, fmt.Errorf("not started: %w", err)
	}
	s.stderr = proc.NewTail(stderrTail)
	cmd.Stderr = s.stderr
	s.cmd = cmd
	return &mcp.CommandTransport{Command: cmd.Cmd, TerminateDuration: terminateAfter}, nil
}

// expand reads ${VAR} and ${VAR:-default} in a .mcp.json server's value
// from the environment the pool was given.
func (s *server) expand(v string) (string, error) {
	out, err := spec.Expand(v, s.pool.lookupEnv)
	if err != nil {
		return "", fmt.Errorf("%w (%s)", err, s.cfg.From)
	}
	return out, nil
}

// expanded is a stdio server's argv and the variables it is given by
// value: as written for a manifest's server, expanded for a .mcp.json's.
func (s *server) expanded() ([]string, []string, error) {
	if !s.cfg.Expand {
		return s.cfg.Command, nil, nil
	}
	argv := make([]string, len(s.cfg.Command))
	for i, a := range s.cfg.Command {
		v, err := s.expand(a)
		if err != nil {
			return nil, nil, fmt.Errorf("not started: %w", err)
		}
		argv[i] = v
	}
	var set []string
	for name, v := range s.cfg.EnvValues {
		v, err := s.expand(v)
		if err != nil {
			return nil, nil, fmt.Errorf("not started: env %s: %w", name, err)
		}
		set = append(set, name+"="+v)
	}
	sort.Strings(set)
	return argv, set, nil
}

// http prepares a Streamable HTTP session. Header values come from the
// environment; an untrusted skill sends none, since its manifest could
// name any secret and any URL.
//
// T4: an untrusted skill's HTTP server gets no environment headers.
func (s *server) http() (*mcp.StreamableClientTransport, error) {
	h := http.Header{}
	for name, env := range s.cfg.Headers {
		if !s.pool.trusted(s.skill) {
			return nil, fmt.Errorf("not connected: the skill's folder %s is not trusted, and the server's headers would send environment variable %s; run fsd with --trust %s to allow it", s.skill.Dir, env, s.skill.Dir)
		}
		v, ok := s.pool.lookupEnv(env)
		if !ok {
			return nil, fmt.Errorf("not connected: header %s takes environment variable %s, which is not set", name, env)
		}
		h.Set(name, v)
	}
	endpoint := s.cfg.URL
	if s.cfg.Expand {
		// As for headers: an untrusted manifest could name any secret
		// and any url.
		if vars := s.cfg.Vars(); len(vars) > 0 && !s.pool.trusted(s.skill) {
			return nil, fmt.Errorf("not connected: the skill's folder %s is not trusted, and the server's url or headers in %s take environment variable %s; run fsd with --trust %s to allow it", s.skill.Dir, s.cfg.From, strings.Join(vars, ", "), s.skill.Dir)
		}
		var err error
		if endpoint, err = s.expand(endpoint); err != nil {
			return nil, fmt.Errorf("not connected: url: %w", err)
		}
		for name, v := range s.cfg.HeaderValues {
			if v, err = s.expand(v); err != nil {
				return nil, fmt.Errorf("not connected: header %s: %w", name, err)
			}
			h.Set(name, v)
		}
	}
	s.cmd = nil
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("not connected: url %q: %v", endpoint, err)
	}
	return &mcp.StreamableClientTransport{
		Endpoint:             endpoint,
		HTTPClient:           &http.Client{Transport: headers{h: h, origin: origin(u), base: s.pool.transport, protocol: s.protocol.Load}},
		DisableStandaloneSSE: true, // fsd asks; it needs no server-initiated messages
		MaxRetries:           2,
	}, nil
}

// headers adds the server's headers to the requests that go to its
// origin (scheme, host and port of its url) and takes them off the others.
//
// T6: a redirect to another origin must not carry the skill's credentials
// there. The http.Client's own rule is not enough: it strips only the
// headers it knows (Authorization, Cookie) and only on a change of
// domain, and a transport that adds headers would add them back on every
// hop.
type headers struct {
	h      http.Header
	origin string
	base   http.RoundTripper
	// protocol is the version the server agreed to, sent as
	// MCP-Protocol-Version when the SDK did not (its connection is wrapped
	// by taskTransport, so the SDK does not tell it the version).
	protocol func() string
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if v := t.protocol(); v != "" && r.Header.Get("Mcp-Protocol-Version") == "" {
		r.Header.Set("Mcp-Protocol-Version", v)
	}
	same := origin(r.URL) == t.origin
	for k, v := range t.h {
		if same {
			r.Header[k] = v
		} else {
			delete(r.Header, k)
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	// The SDK reads a JSON answer, and an error's body, whole and without
	// a bound (it bounds each SSE event, and a stdio line, at 16 MiB): a
	// server answering gigabytes would take fsd's memory. Bounded the same.
	if !strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: MaxAnswerBytes}
	}
	return resp, nil
}

// MaxAnswerBytes bounds one answer of a server, over either transport
// (the SDK's own bound for a stdio line and an SSE event).
const MaxAnswerBytes = mcp.DefaultMaxLineLength

// boundedBody is a response body that fails once it is over left bytes.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("the server's answer is over %d MiB", MaxAnswerBytes>>20)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// origin is u's scheme, host and port, the port written out.
func origin(u *url.URL) string {
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// close ends the session (a stdio server: stdin closed, then SIGTERM,
// then SIGKILL to its whole group).
func (s *server) close() {
	s.mu.Lock()
	cs, cmd := s.sess, s.cmd
	s.sess = nil
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	if cmd != nil {
		proc.KillGroup(cmd.Cmd)
	}
}

// protocolError reports whether err is the server's JSON-RPC answer (the
// session is fine) rather than a broken connection.
func protocolError(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we)
}

func withStderr(err error, t *proc.Tail) error {
	if t == nil {
		return err
	}
	if s := strings.TrimSpace(t.String()); s != "" {
		return fmt.Errorf("%w; its stderr ends:\n%s", err, s)
	}
	return err
}
