package mcptool

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsdrun/fsd/internal/mcptest"
	"github.com/fsdrun/fsd/internal/proctest"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// Both transports: the tools a server lists come back under their stated
// names, a call's text is the result, an isError result is a tool error,
// and arguments the input schema rejects are never sent.
func TestListAndCall(t *testing.T) {
	testpar.UnlessRace(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			e := newEnv(t)
			var served atomic.Int64
			s := stdioSkill(t, nil)
			if transport == "http" {
				srv := mcptest.HTTP(&served)
				defer srv.Close()
				s = httpSkill(srv.URL, nil)
			}
			p := newPool(t, e, Options{})
			tools, notes := p.Acquire(context.Background(), s)
			if len(notes) > 0 {
				t.Fatalf("notes: %v", notes)
			}
			var names []string
			for _, tl := range tools {
				names = append(names, tl.Def().Name)
			}
			sort.Strings(names)
			var want []string
			for _, n := range mcptest.Tools {
				want = append(want, "mcp__tracker__t__"+n)
			}
			if !slices.Equal(names, want) {
				t.Errorf("tools = %v\nwant %v", names, want)
			}
			m := byName(tools)
			if res := call(m["echo"], `{"text":"hi"}`); res.IsError || res.Text != "echo: hi" {
				t.Errorf("echo = %+v", res)
			}
			res := call(m["fail"], `{}`)
			if !res.IsError || res.Text != "the record is locked" {
				t.Errorf("fail = %+v, want the server's error text marked as an error", res)
			}
			before := len(e.calls(t)) + int(served.Load())
			res = call(m["add"], `{"a":"one","b":2}`)
			if !res.IsError || !strings.Contains(res.Text, "invalid arguments") || !strings.Contains(res.Text, "/a") {
				t.Errorf("add with a string = %+v, want a schema error naming /a", res)
			}
			if after := len(e.calls(t)) + int(served.Load()); after != before {
				t.Errorf("a call the schema rejects reached the server")
			}
			if res := call(m["add"], `{"a":40,"b":2}`); res.Text != "42" {
				t.Errorf("add = %+v", res)
			}
		})
	}
}

// Only allowlisted tools are offered; an allowlist entry the server does
// not have is noted.
func TestAllowlist(t *testing.T) {
	testpar.UnlessRace(t)
	e := newEnv(t)
	p := newPool(t, e, Options{})
	tools, notes := p.Acquire(context.Background(), stdioSkill(t, []string{"echo", "pid", "delete_everything"}))
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Remote())
	}
	if !slices.Equal(names, []string{"echo", "pid"}) {
		t.Errorf("tools = %v, want [echo pid]", names)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "delete_everything") {
		t.Errorf("notes = %v, want one naming delete_everything", notes)
	}
}

// A server that dies during a call gives an error result; the next call
// starts it again.
func TestCrashAndRestart(t *testing.T) {
	testpar.UnlessRace(t)
	e := newEnv(t)
	s := stdioSkill(t, nil)
	p := newPool(t, e, Options{Sandbox: unconfined})
	tools, _ := p.Acquire(context.Background(), s)
	m := byName(tools)
	first := call(m["pid"], `{}`).Text
	res := call(m["crash"], `{}`)
	if !res.IsError || !strings.Contains(res.Text, "stopped during the call") || !strings.Contains(res.Text, "started again") {
		t.Errorf("crash = %+v", res)
	}
	if !strings.Contains(res.Text, "crashing on purpose") {
		t.Errorf("the error lacks the server's stderr: %q", res.Text)
	}
	second := call(m["pid"], `{}`)
	if second.IsError || second.Text == first {
		t.Errorf("after the crash: %+v (first pid %s), want a new server's pid", second, first)
	}
	if st := p.Stats(s, "t"); st.Starts != 2 {
		t.Errorf("starts = %d, want 2", st.Starts)
	}
	// A server killed between calls is noticed too.
	pid, _ := strconv.Atoi(second.Text)
	_ = syscallKill(pid)
	if !proctest.Gone(pid) {
		t.Fatal("server did not die")
	}
	var third string
	for range 100 { // the watcher may not have seen the exit yet: then this call reports it
		r := call(m["pid"], `{}`)
		if !r.IsError {
			third = r.Text
			break
		}
	}
	if third == "" || third == second.Text {
		t.Errorf("no new server after a kill between calls")
	}
}

// A call past the server's timeout is an error result, and the server is
// told to cancel it; a cancelled run cancels the call.
func TestTimeoutAndCancel(t *testing.T) {
	testpar.UnlessRace(t)
	e := newEnv(t)
	s := stdioSkill(t, nil)
	s.MCP[0].Timeout = 100 * time.Millisecond
	p := newPool(t, e, Options{})
	tools, _ := p.Acquire(context.Background(), s)
	m := byName(tools)
	res := call(m["sleep"], `{}`)
	if !res.IsError || !strings.Contains(res.Text, "timed out after 100ms") {
		t.Errorf("sleep = %+v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.MCP[0].Timeout = time.Hour
	done := make(chan struct{})
	var got string
	go func() {
		defer close(done)
		r := m["sleep"].Call(ctx, []byte(`{}`), nil)
		got = r.Text
	}()
	for range 500 { // cancel once the call reached the server
		if n := len(e.calls(t)); n >= 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if !strings.HasPrefix(got, "cancelled") {
		t.Errorf("cancelled call = %q", got)
	}
	cancelled := 0
	for range 500 {
		cancelled = 0
		for _, l := range e.calls(t) {
			if strings.HasPrefix(l, "sleep-cancelled") {
				cancelled++
			}
		}
		if cancelled == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if cancelled != 2 {
		t.Errorf("the server saw %d cancellations, want 2: %v", cancelled, e.calls(t))
	}
	if r := call(m["echo"], `{"text":"still here"}`); r.IsError {
		t.Errorf("the server is unusable after a timeout: %+v", r)
	}
}

// An untrusted skill's stdio server never starts; the note says what to
// trust.
func TestUntrustedStdioRefused(t *testing.T) {
	testpar.UnlessRace(t)
	e := newEnv(t)
	s := stdioSkill(t, nil)
	p := newPool(t, e, Options{Trusted: func(*spec.Skill) bool { return false }})
	tools, notes := p.Acquire(context.Background(), s)
	if len(tools) != 0 {
		t.Errorf("tools offered: %d", len(tools))
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "not trusted") || !strings.Contains(notes[0], "--trust") {
		t.Errorf("notes = %v", notes)
	}
	if st := p.Stats(s, "t"); st.Starts != 0 {
		t.Errorf("an untrusted server started")
	}
}

// Images and embedded resources become artifacts named by handle; a
// flood is cut at the limit and marked.
func TestContentKinds(t *testing.T) {
	testpar.UnlessRace(t)
	e := newEnv(t)
	sp := &fakeSpool{}
	p := newPool(t, e, Options{Spool: sp})
	tools, _ := p.Acquire(context.Background(), stdioSkill(t, nil))
	m := byName(tools)
	res := call(m["image"], `{}`)
	if res.IsError || !strings.HasPrefix(res.Text, "a red dot\n[image (image/png, 67 bytes) kept as artifact h_1") {
		t.Errorf("image = %q", res.Text)
	}
	if !bytes.Equal(sp.kept["h_1"], mcptest.PNG) {
		t.Errorf("kept image differs from the server's")
	}
	res = call(m["resource"], `{}`)
	if !strings.Contains(res.Text, "resource file:///notes.md: [resource (text/markdown") || !strings.Contains(string(sp.kept["h_2"]), "Revenue grew") {
		t.Errorf("resource = %q", res.Text)
	}
	res = call(m["big"], `{}`)
	if !res.Truncated || len(res.Text) > MaxResultBytes+100 || !strings.HasSuffix(res.Text, "[output truncated at 1 MiB]") {
		t.Errorf("big: truncated=%v len=%d", res.Truncated, len(res.Text))
	}
}

// A server nobody uses closes after the idle time (here: at once), and
// Close stops the rest; their processes are gone.
func TestIdleAndClose(t *testing.T) {
	testpar.UnlessRace(t)
	e := newEnv(t)
	s := stdioSkill(t, nil)
	p := NewPool(Options{LookupEnv: e.lookup, Idle: -1, Sandbox: unconfined})
	tools, _ := p.Acquire(context.Background(), s)
	pid, _ := strconv.Atoi(call(byName(tools)["pid"], `{}`).Text)
	p.Release(s)
	if !proctest.Gone(pid) {
		t.Errorf("the idle server %d is still running", pid)
	}
	tools, _ = p.Acquire(context.Background(), s)
	pid2, _ := strconv.Atoi(call(byName(tools)["pid"], `{}`).Text)
	if pid2 == pid || p.Stats(s, "t").Starts != 2 {
		t.Errorf("a second load did not start the server again")
	}
	p.Close()
	if !proctest.Gone(pid2) {
		t.Errorf("Close left the server %d running", pid2)
	}
	if _, notes := p.Acquire(context.Background(), s); len(notes) == 0 {
		t.Errorf("Acquire after Close gave no note")
	}
}

// A server nothing uses closes once its idle time has passed: the
// process exits without the pool being closed.
func TestIdleTimeCloses(t *testing.T) {
	testpar.UnlessRace(t)
	e := newEnv(t)
	s := stdioSkill(t, nil)
	p := newPool(t, e, Options{Idle: time.Millisecond, Sandbox: unconfined})
	tools, _ := p.Acquire(context.Background(), s)
	pid, _ := strconv.Atoi(call(byName(tools)["pid"], `{}`).Text)
	if !proctest.Running(pid) {
		t.Fatalf("the server said its pid is %d, which is not running", pid)
	}
	p.Release(s)
	if !proctest.Gone(pid) {
		t.Errorf("the server %d is still running after its idle time", pid)
	}
	if st := p.Stats(s, "t"); st.Connected || st.Users != 0 {
		t.Errorf("stats = %+v, want no session and no user", st)
	}
}

// Reading the skill again within the idle time reuses the running server.
func TestReloadWithinIdleReuses(t *testing.T) {
	testpar.UnlessRace(t)
	e := newEnv(t)
	s := stdioSkill(t, nil)
	p := newPool(t, e, Options{Idle: time.Hour})
	p.Acquire(context.Background(), s)
	p.Release(s)
	p.Acquire(context.Background(), s)
	if st := p.Stats(s, "t"); st.Starts != 1 || !st.Connected || st.Users != 1 {
		t.Errorf("stats = %+v, want one start, connected, one user", st)
	}
}

// A stdio server dies with fsd, even when fsd is killed with SIGKILL and
// the server would live on past the end of its input.
func TestServerDiesWithParent(t *testing.T) {
	testpar.UnlessRace(t)
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "FSD_MCPTOOL_PARENT=1")
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	var out bytes.Buffer
	r, w, _ := os.Pipe()
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line := make([]byte, 64)
	n, _ := r.Read(line)
	out.Write(line[:n])
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("parent said %q", out.String())
	}
	if !proctest.Running(pid) {
		t.Fatal("server not running")
	}
	defer syscallKill(pid) // if the test fails
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !proctest.Gone(pid) {
		t.Errorf("server %d outlived its killed parent", pid)
	}
}

// HTTP header values come from the environment variables the manifest
// names; a variable that is not set is a note, and nothing connects.
func TestHTTPHeadersFromEnv(t *testing.T) {
	testpar.UnlessRace(t)
	srv := mcptest.Server(nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	e := newEnv(t)
	s := httpSkill(ts.URL, []string{"echo"})
	s.MCP[0].Headers = map[string]string{"Authorization": "TRACKER_TOKEN"}
	p := newPool(t, e, Options{})
	if tools, notes := p.Acquire(context.Background(), s); len(tools) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "TRACKER_TOKEN, which is not set") {
		t.Errorf("without the variable: %d tools, notes %v", len(tools), notes)
	}
	e.vars["TRACKER_TOKEN"] = "Bearer s3cret"
	tools, notes := p.Acquire(context.Background(), s)
	if len(notes) > 0 || len(tools) != 1 {
		t.Fatalf("with the variable: %d tools, notes %v", len(tools), notes)
	}
	if res := call(tools[0], `{"text":"ok"}`); res.Text != "echo: ok" {
		t.Errorf("echo = %+v", res)
	}
	untrusted := newPool(t, e, Options{Trusted: func(*spec.Skill) bool { return false }})
	if _, notes := untrusted.Acquire(context.Background(), s); len(notes) != 1 || !strings.Contains(notes[0], "not trusted") {
		t.Errorf("an untrusted skill's headers were sent: notes %v", notes)
	}
}

func TestToolName(t *testing.T) {
	testpar.UnlessRace(t)
	long := strings.Repeat("a", 60)
	for _, tc := range []struct{ skill, server, tool, want string }{
		{"tracker", "github", "create_issue", "mcp__tracker__github__create_issue"},
		{"tracker", "fs", "read.file", "mcp__tracker__fs__read_file_"},
		{"tracker", "fs", long, "mcp__tracker__fs__aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_"},
	} {
		got := ToolName(tc.skill, tc.server, tc.tool)
		if !strings.HasPrefix(got, tc.want) || len(got) > 64 {
			t.Errorf("ToolName(%q) = %q, want prefix %q and at most 64 characters", tc.tool, got, tc.want)
		}
	}
	if ToolName("s", "x", "a.b") == ToolName("s", "x", "a_b") || ToolName("s", "x", long+"1") == ToolName("s", "x", long+"2") {
		t.Errorf("names clash after cleaning or cutting")
	}
}

// A trusted skill's HTTP headers go only to its url's origin (scheme, host
// and port): a server that redirects elsewhere — another host name, or
// another port of the same host — does not hand the skill's credentials
// to what is there. A redirect within the origin keeps them.
func TestHTTPHeadersStayWithTheirOrigin(t *testing.T) {
	testpar.UnlessRace(t)
	srv := mcptest.Server(nil)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	// counting serves MCP and counts the requests that arrive, and those
	// that carry the Authorization header.
	type count struct{ all, auth atomic.Int64 }
	counting := func(c *count) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.all.Add(1)
			if r.Header.Get("Authorization") != "" {
				c.auth.Add(1)
			}
			mcpHandler.ServeHTTP(w, r)
		})
	}
	var front, other count
	otherTS := httptest.NewServer(counting(&other))
	defer otherTS.Close()
	var dest atomic.Value // where /old redirects, set per case
	mux := http.NewServeMux()
	mux.Handle("/mcp", counting(&front))
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, dest.Load().(string), http.StatusTemporaryRedirect)
	})
	frontTS := httptest.NewServer(mux)
	defer frontTS.Close()

	for _, tc := range []struct {
		name, dest string
		sameOrigin bool
	}{
		{"another host", strings.Replace(otherTS.URL, "127.0.0.1", "localhost", 1) + "/mcp", false},
		{"another port", otherTS.URL + "/mcp", false},
		{"same origin", frontTS.URL + "/mcp", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest.Store(tc.dest)
			for _, c := range []*count{&front, &other} {
				c.all.Store(0)
				c.auth.Store(0)
			}
			e := newEnv(t)
			e.vars["TRACKER_TOKEN"] = "Bearer s3cret"
			s := httpSkill(frontTS.URL+"/old", []string{"echo"})
			s.MCP[0].Headers = map[string]string{"Authorization": "TRACKER_TOKEN"}
			p := newPool(t, e, Options{})
			tools, notes := p.Acquire(context.Background(), s)
			if len(notes) > 0 || len(tools) != 1 {
				t.Fatalf("%d tools, notes %v", len(tools), notes)
			}
			if res := call(tools[0], `{"text":"ok"}`); res.Text != "echo: ok" {
				t.Errorf("echo = %+v", res)
			}
			p.Close()
			target := &other
			if tc.sameOrigin {
				target = &front
			}
			switch all, auth := target.all.Load(), target.auth.Load(); {
			case all == 0:
				t.Fatalf("the redirect was not followed")
			case tc.sameOrigin && auth != all:
				t.Errorf("%d of %d requests to the server's own origin carried the header", auth, all)
			case !tc.sameOrigin && auth != 0:
				t.Errorf("%d of %d requests to %s carried the skill's Authorization header", auth, all, tc.dest)
			}
		})
	}
}
