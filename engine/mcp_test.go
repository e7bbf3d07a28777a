package engine

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/keytest"
	"github.com/fsdrun/fsd/internal/mcptest"
	"github.com/fsdrun/fsd/internal/proctest"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

func TestMain(m *testing.M) {
	mcptest.ServeIfAsked()
	flag.Parse()
	// Many of these tests wait on programs they start (scripts, MCP
	// servers, sandboxes) or on a scripted model's sleeps.
	testpar.Widen(4)
	os.Exit(keytest.Main(m))
}

const echoTool = "mcp__tracker__t__echo"

// mcpSkill is a skill whose MCP server "t" is the test server: this test
// binary on stdio, or the HTTP server at url. Its calls are logged to the
// returned file.
func mcpSkill(t *testing.T, url string, allow []string) (*spec.Skill, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "calls.log")
	t.Setenv(mcptest.EnvServe, "stdio")
	t.Setenv(mcptest.EnvLog, log)
	s := skill("tracker", "1.0.0", spec.ChannelInline)
	s.Dir = t.TempDir()
	srv := spec.MCPServer{Name: "t", Tools: allow, URL: url}
	if url == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		srv.Command = []string{exe, "-test.run=^$"}
		srv.Env = []string{mcptest.EnvServe, mcptest.EnvLog}
	}
	s.MCP = []spec.MCPServer{srv}
	return s, log
}

// writable lets the skills' programs of p write in dirs, as a workflow's
// sandbox: {write: [...]} does (a test server's call log, a command's
// marker).
func writable(p *spec.Project, dirs ...string) *spec.Project {
	p.Workflow.Sandbox = &spec.Sandbox{Write: dirs}
	return p
}

func lines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// count is how many logged calls were of tool name.
func count(t *testing.T, log, name string) int {
	n := 0
	for _, l := range lines(t, log) {
		if l == name || strings.HasPrefix(l, name+" ") {
			n++
		}
	}
	return n
}

// L2/L3 for MCP tools, on both transports: the allowlisted tools of the
// skill's server are in every request while the skill is loaded, work,
// and leave the request when it is evicted; a call after that answers
// Unknown tool. The server was started on the load and closed on unload.
func TestMCPToolsFollowTheSkill(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			var served atomic.Int64
			url := ""
			if transport == "http" {
				srv := mcptest.HTTP(&served)
				defer srv.Close()
				url = srv.URL
			}
			s, log := mcpSkill(t, url, []string{"echo", "fail", "meta"})
			p := project(s, skill("other", "1.0.0", spec.ChannelInline))
			p.Workflow.Limits.MaxLoadedSkills = 1
			writable(p, filepath.Dir(log))
			res, m, _, err := runWith(t, p, Options{MCPIdle: -1},
				read("tracker"),
				call(echoTool, map[string]string{"text": "hi"}),
				call("mcp__tracker__t__fail", nil),
				call("mcp__tracker__t__meta", nil),
				read("other"),
				call(echoTool, map[string]string{"text": "again"}),
				say("done"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Answer != "done" {
				t.Errorf("answer = %q", res.Answer)
			}
			reqs := m.requests()
			if names := toolNames(reqs[0]); has(names, echoTool) {
				t.Errorf("MCP tool offered before the skill loaded: %v", names)
			}
			for i := 1; i <= 4; i++ {
				names := toolNames(reqs[i])
				if !has(names, echoTool) || !has(names, "mcp__tracker__t__fail") {
					t.Errorf("request %d lacks the loaded skill's MCP tools: %v", i, names)
				}
				if has(names, "mcp__tracker__t__pid") {
					t.Errorf("request %d offers a tool the allowlist leaves out", i)
				}
			}
			if r := lastResult(reqs[2]); r.IsError || r.Text != "echo: hi" {
				t.Errorf("echo result = %+v", r)
			}
			if r := lastResult(reqs[3]); !r.IsError || r.Text != "the record is locked" {
				t.Errorf("fail result = %+v, want the server's isError text as a tool error", r)
			}
			var meta map[string]any
			_ = json.Unmarshal([]byte(lastResult(reqs[4]).Text), &meta)
			if meta["fsd/call-id"] != "host/s4/c1" || meta["fsd/run-id"] != res.RunID {
				t.Errorf("the call's _meta = %v, want the run and call ids commands get", meta)
			}
			if names := toolNames(reqs[5]); has(names, echoTool) {
				t.Errorf("MCP tool still offered after unload: %v", names)
			}
			if r := lastResult(reqs[6]); !r.IsError || r.Text != "Unknown tool: "+echoTool {
				t.Errorf("call after unload = %+v", r)
			}
			n := count(t, log, "echo") + count(t, log, "fail") + count(t, log, "meta")
			if transport == "http" {
				n = int(served.Load())
			}
			if n != 3 {
				t.Errorf("the server answered %d calls, want 3 (echo, fail, meta)", n)
			}
		})
	}
}

// Evicting an MCP skill releases its server: with a short idle time the
// server's process exits while the run goes on.
func TestMCPEvictionStopsServer(t *testing.T) {
	s, _ := mcpSkill(t, "", []string{"pid"})
	p := project(s, skill("other", "1.0.0", spec.ChannelInline))
	p.Workflow.Limits.MaxLoadedSkills = 1
	// Unconfined: a sandboxed server's pid is its PID namespace's, which
	// this process cannot look up (the sandbox's own tests kill its calls).
	p.Workflow.Sandbox = &spec.Sandbox{Off: true}
	var pid int
	gone := false
	evicted := func(req *model.Request) *model.Response {
		for _, msg := range req.Messages {
			if n, err := strconv.Atoi(msg.Text); msg.Role == model.Tool && err == nil {
				pid = n // the pid tool's answer
			}
		}
		gone = proctest.Gone(pid)
		return say("done")(req)
	}
	_, m, _, err := runWith(t, p, Options{MCPIdle: time.Millisecond},
		read("tracker"), call("mcp__tracker__t__pid", nil), read("other"), evicted)
	if err != nil {
		t.Fatal(err)
	}
	if pid == 0 {
		t.Fatalf("the pid tool answered %q", lastResult(m.requests()[2]).Text)
	}
	if !gone {
		t.Errorf("the server %d of the evicted skill still ran while the run went on", pid)
	}
}

// An untrusted skill's stdio server does not start: the read's receipt
// says why and what to trust, and no MCP tool is offered.
func TestMCPUntrustedStdioRefused(t *testing.T) {
	s, log := mcpSkill(t, "", nil)
	p := project(s)
	writable(p, filepath.Dir(log))
	_, m, _, err := runWith(t, p, Options{Trusted: func(*spec.Skill) bool { return false }},
		read("tracker"), call(echoTool, map[string]string{"text": "hi"}), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if r := lastResult(reqs[1]); !strings.Contains(r.Text, "not trusted") || !strings.Contains(r.Text, "--trust") {
		t.Errorf("receipt = %s", r.Text)
	}
	if has(toolNames(reqs[1]), echoTool) {
		t.Error("an untrusted stdio server's tools are offered")
	}
	if r := lastResult(reqs[2]); r.Text != "Unknown tool: "+echoTool {
		t.Errorf("call = %+v", r)
	}
	if l := lines(t, log); len(l) != 0 {
		t.Errorf("the server ran: %v", l)
	}
}

// Resume never calls an MCP tool again for a call that completed: its
// journaled result stands in for it.
func TestMCPResumeDoesNotCallAgain(t *testing.T) {
	s, log := mcpSkill(t, "", nil)
	p := project(s)
	writable(p, filepath.Dir(log))
	steps := []step{read("tracker"), call(echoTool, map[string]string{"text": "once"})}
	down := errors.New("503 service unavailable")
	first := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step < len(steps) {
			return steps[req.Caller.Step](req), nil
		}
		return nil, down
	})
	r, err := New(p, Options{Model: first, RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if !errors.Is(err, down) {
		t.Fatalf("first run: %v", err)
	}
	if n := count(t, log, "echo"); n != 1 {
		t.Fatalf("first run called echo %d times", n)
	}
	j, err := LoadReplay(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var last model.Message
	second := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		last = lastResult(req)
		return &model.Response{Text: "resumed"}, nil
	})
	r2, err := New(p, Options{Model: second, Resume: j})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if last.Text != "echo: once" {
		t.Errorf("the resumed request's last result = %+v", last)
	}
	if n := count(t, log, "echo"); n != 1 {
		t.Errorf("echo reached the server %d times over run and resume, want 1", n)
	}
}

// Cancelling the run cancels an MCP call in flight: the server is told,
// and the run ends promptly with the cancellation.
func TestMCPCancelOnRunCancel(t *testing.T) {
	s, log := mcpSkill(t, "", nil)
	p := project(s)
	writable(p, filepath.Dir(log))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steps := []step{read("tracker"), call("mcp__tracker__t__sleep", nil), say("done")}
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return steps[req.Caller.Step](req), nil
	})
	go func() {
		for range 1000 { // cancel once the call is at the server
			if count(t, log, "sleep") > 0 {
				cancel()
				return
			}
			waitABit()
		}
	}()
	r, err := New(p, Options{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Execute(ctx, "")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("run error = %v, want context.Canceled", err)
	}
	var got []string
	for range 500 {
		if got = lines(t, log); count(t, log, "sleep-cancelled") > 0 {
			return
		}
		waitABit()
	}
	t.Errorf("the server never saw the cancellation: %v", got)
}

func waitABit() { time.Sleep(10 * time.Millisecond) }

// What an MCP tool returns beyond text is kept as work of the run, readable
// by handle after the skill is unloaded; a flood is kept like any large
// result, with a preview in the window.
func TestMCPResultsAsArtifacts(t *testing.T) {
	s, _ := mcpSkill(t, "", []string{"image", "big"})
	p := project(s, skill("other", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxLoadedSkills = 1
	handle := regexp.MustCompile(`kept as artifact (h_[0-9a-f]{32})`)
	_, m, _, err := runWith(t, p, Options{},
		read("tracker"),
		call("mcp__tracker__t__image", nil),
		call("mcp__tracker__t__big", nil),
		read("other"),
		func(req *model.Request) *model.Response {
			var h string
			for _, msg := range req.Messages {
				if msg.Name == "mcp__tracker__t__image" {
					if m := handle.FindStringSubmatch(msg.Text); m != nil {
						h = m[1]
					}
				}
			}
			return call("artifact_read", map[string]string{"get": "size", "handle": h})(req)
		},
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if r := lastResult(reqs[2]); !strings.HasPrefix(r.Text, "a red dot\n[image (image/png, 67 bytes) kept as artifact h_") {
		t.Errorf("image result = %q", r.Text)
	}
	if r := lastResult(reqs[3]); !strings.HasPrefix(r.Text, "[result kept as artifact") || len(r.Text) > 4000 {
		t.Errorf("the 1 MiB result rides in the window: %d bytes, %.80q", len(r.Text), r.Text)
	}
	if r := lastResult(reqs[5]); r.IsError || !strings.Contains(r.Text, "67") {
		t.Errorf("reading the image after the skill left = %+v", r)
	}
}

// An agent of the skill may list MCP tools in its tools: as SERVER/TOOL or
// SERVER/*; its worker gets exactly those.
func TestMCPToolsForAgents(t *testing.T) {
	s, log := mcpSkill(t, "", nil)
	s.Agents = []spec.Agent{{Name: "filer", Tools: []string{"t/echo", "tracker_echo"}}, {Name: "all", Tools: []string{"t/*"}}}
	_, m, _, err := runWith(t, writable(project(s), filepath.Dir(log)), Options{},
		read("tracker"),
		call("addTask", add("a", "filer")),
		call("runBoard", nil),
		call(echoTool, map[string]string{"text": "from the worker"}),
		say("filed"),
		call("addTask", add("b", "all")),
		call("runBoard", nil),
		say("listed"),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	worker := reqs[3]
	if worker.Caller.TaskID != "a" {
		t.Fatalf("request 4 is %+v, want task a's first", worker.Caller)
	}
	if names := toolNames(worker); !has(names, echoTool) || has(names, "mcp__tracker__t__fail") || !has(names, "tracker_echo") {
		t.Errorf("filer's tools = %v, want echo (t/echo) and tracker_echo only", names)
	}
	if r := lastResult(reqs[4]); r.Text != "echo: from the worker" {
		t.Errorf("worker's call = %+v", r)
	}
	if reqs[7].Caller.TaskID != "b" {
		t.Fatalf("request 8 is %+v, want task b's first", reqs[7].Caller)
	}
	all := toolNames(reqs[7])
	for _, n := range mcptest.Tools {
		if !has(all, "mcp__tracker__t__"+n) {
			t.Errorf("t/* left out %s: %v", n, all)
		}
	}
	if n := count(t, log, "echo"); n != 1 {
		t.Errorf("echo reached the server %d times", n)
	}
}

// What an MCP server prints of what it was given — the variables its
// env: lists, the value of its Authorization header — comes back masked,
// on both transports: in the result the next request carries and in the
// events.
//
// S8: an MCP tool's result is masked like a command's.
func TestMCPResultSecretsAreMasked(t *testing.T) {
	const key = `mcp-&<key>"-5ecret-0a1b2c3d`
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Setenv(mcptest.EnvSecret, key)
			url := ""
			if transport == "http" {
				srv := mcptest.HTTP(nil)
				defer srv.Close()
				url = srv.URL
			}
			s, _ := mcpSkill(t, url, []string{"secrets"})
			if url == "" {
				s.MCP[0].Env = append(s.MCP[0].Env, mcptest.EnvSecret)
			} else {
				s.MCP[0].Headers = map[string]string{"Authorization": mcptest.EnvSecret}
			}
			res, m, evs, err := runWith(t, project(s), Options{MCPIdle: -1},
				read("tracker"), call("mcp__tracker__t__secrets", nil), say("done"))
			if err != nil || res.Answer != "done" {
				t.Fatalf("answer %q, error %v", res.Answer, err)
			}
			want := "env=[REDACTED] auth="
			if transport == "http" {
				want = "env=[REDACTED] auth=[REDACTED]"
			}
			if r := lastResult(m.requests()[2]); r.Text != want {
				t.Errorf("the server's result reads %q, want %q", r.Text, want)
			}
			b, _ := json.Marshal(evs)
			if strings.Contains(string(b), "5ecret-0a1b2c3d") {
				t.Errorf("the events hold the key: %s", b)
			}
		})
	}
}
