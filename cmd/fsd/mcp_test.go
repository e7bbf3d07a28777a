package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const fanout = "../../examples/fanout/fanout.workflow.yaml"

// progressLog collects a client's progress notifications.
type progressLog struct {
	mu   sync.Mutex
	seen []*mcp.ProgressNotificationParams
}

func (p *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, req.Params)
}

// The SDK's own client runs `fsd mcp serve` on the fan-out example over
// stdio: it lists one tool named for the workflow, calls it, and gets the
// answer, a progress notification per finished task, and a run record.
func TestMCPServeStdio(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "mcp", "serve", "--runs-dir", runs, fanout)
	cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	prog := &progressLog{}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: prog.handle})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != "market-fanout" {
		t.Fatalf("tools = %+v, want one named market-fanout", list.Tools)
	}
	if !strings.Contains(list.Tools[0].Description, "market-fanout") {
		t.Errorf("description = %q", list.Tools[0].Description)
	}
	params := &mcp.CallToolParams{Name: "market-fanout", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("call: %v\nstderr: %s", err, stderr.String())
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result = %+v", res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(text, "Online sales grew fastest") {
		t.Errorf("answer = %q", text)
	}
	prog.mu.Lock()
	seen := append([]*mcp.ProgressNotificationParams(nil), prog.seen...)
	prog.mu.Unlock()
	// Notifications may trail the result on the wire: wait for them, boundedly.
	for i := 0; len(seen) < 7 && i < 200; i++ {
		time.Sleep(10 * time.Millisecond)
		prog.mu.Lock()
		seen = append(seen[:0], prog.seen...)
		prog.mu.Unlock()
	}
	if len(seen) != 7 {
		t.Fatalf("%d progress notifications, want one per task (7)", len(seen))
	}
	for i, p := range seen {
		if p.ProgressToken != "p1" || p.Progress != float64(i+1) || p.Total < p.Progress || !regexp.MustCompile(`^task \w+ \(market-research/\w+\) completed$`).MatchString(p.Message) {
			t.Errorf("notification %d = %+v", i, p)
		}
	}
	if last := seen[len(seen)-1]; last.Progress != 7 || last.Total != 7 {
		t.Errorf("last notification = %+v, want 7 of 7", last)
	}
	recs, _ := filepath.Glob(filepath.Join(runs, "*", "run.json"))
	if len(recs) != 1 {
		t.Fatalf("run records: %v", recs)
	}
	if b, _ := os.ReadFile(recs[0]); !strings.Contains(string(b), `"status": "finished"`) && !strings.Contains(string(b), `"status":"finished"`) {
		t.Errorf("run.json = %s", b)
	}
}

// --http serves Streamable HTTP on loopback; a call's input replaces the
// workflow's, and a broken call is an isError result, not a dead server.
func TestMCPServeHTTP(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- serveMCP(ctx, "../../examples/hello/hello.workflow.yaml", mcpFlags{runFlags: runFlags{runsDir: t.TempDir()}, http: ":0"}, nil, nil, &stderr)
	}()
	var url string
	addr := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/mcp)`)
	for i := 0; url == "" && i < 500; i++ {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	if url == "" {
		t.Fatalf("no address on stderr: %q", stderr.String())
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 1 {
		t.Fatalf("tools: %v %+v", err, list)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: list.Tools[0].Name, Arguments: map[string]any{"input": "Greet Ada."}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text == "" {
		t.Errorf("empty answer")
	}
	cs.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// fsd mcp serve takes --otel-content as fsd run does: a call's run puts
// its prompts and results in its spans only with the flag, keys masked.
//
// S4: no text in a span unless --otel-content, on every command that runs.
func TestMCPServeOtelContent(t *testing.T) {
	const secret = "sk-planted-otel-mcp-1a2b3c4d"
	t.Setenv("OPENAI_API_KEY", secret)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, content := range []bool{false, true} {
		rcv := newOTLPReceiver(t)
		args := []string{"mcp", "serve", "--runs-dir", t.TempDir(), "../../examples/conversation.workflow.yaml"}
		if content {
			args = append(args, "--otel-content")
		}
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weekly-conversation",
			Arguments: map[string]any{"input": "Prepare the sales brief for 2026-W47. My key is " + secret}})
		cs.Close()
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v\nstderr: %s", err, res, stderr.String())
		}
		// The call's run sends its spans before it answers.
		rcv.mu.Lock()
		all := ""
		for _, body := range rcv.bodies {
			all += string(body)
		}
		rcv.mu.Unlock()
		if !strings.Contains(all, "invoke_workflow") {
			t.Fatalf("--otel-content=%v: no run span exported", content)
		}
		if has := strings.Contains(all, "Prepare the sales brief") && strings.Contains(all, "gen_ai.input.messages"); has != content {
			t.Errorf("--otel-content=%v: prompt text in the spans is %v", content, has)
		}
		if strings.Contains(all, secret) {
			t.Errorf("--otel-content=%v: the planted key is in a span", content)
		}
	}
}

// Stopping fsd mcp serve --http (a signal, here its context) cancels the
// runs of calls in flight: each call answers that its run was
// interrupted and its record says so; they were left running until the
// grace period ran out and the process exited under them.
func TestMCPServeHTTPStopCancelsCalls(t *testing.T) {
	t.Parallel()
	dir := slowWorkflow(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncbuf.Buffer
	runs := t.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- serveMCP(ctx, filepath.Join(dir, "slow.workflow.yaml"), mcpFlags{runFlags: runFlags{runsDir: runs}, http: ":0"}, nil, nil, &stderr)
	}()
	var url string
	addr := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/mcp)`)
	for i := 0; url == "" && i < 500; i++ {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	if url == "" {
		t.Fatalf("no address on stderr: %q", stderr.String())
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"})
		answered <- answer{res, err}
	}()
	napping(t, runs)
	// The client's open session holds the server for its grace period
	// (5s): the run is cancelled, and its call answered, well before.
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	select {
	case a := <-answered:
		if a.err != nil || !a.res.IsError || !strings.Contains(a.res.Content[0].(*mcp.TextContent).Text, "interrupted") {
			t.Errorf("call = %+v, %v; want an isError result saying the run was interrupted", a.res, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the call never answered")
	}
	recs, _ := filepath.Glob(filepath.Join(runs, "*", "run.json"))
	if len(recs) != 1 {
		t.Fatalf("run records: %v", recs)
	}
	if b, _ := os.ReadFile(recs[0]); !regexp.MustCompile(`"status": ?"interrupted"`).Match(b) || !regexp.MustCompile(`"finished"`).Match(b) {
		t.Errorf("run.json = %s", b)
	}
}

// slowWorkflow is a workflow whose run naps for a minute in a command
// tool; it returns the workflow's folder.
func slowWorkflow(t *testing.T) string {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "slow.workflow.yaml"), "name: slow\nmodel: scripted\nscript: slow.script.yaml\nskills: [./skills]\nhost: {prompt: p}\ninput: go\n")
	write(t, filepath.Join(dir, "slow.script.yaml"), "host:\n  - call: read_skill\n    args: {id: slow}\n  - call: nap\n    args: {}\n  - say: napped\n")
	write(t, filepath.Join(dir, "skills/slow/slow.skill.yaml"), "id: slow\nname: Slow\ndescription: Naps. Use when asked.\nversion: 1.0.0\ninstructions: nap\n"+
		"tools:\n  - name: nap\n    description: naps\n    input: {type: object}\n    run: {command: [sleep, \"60\"], timeout: 5m}\n    approve: never\n")
	return dir
}

// napping waits until the one run in runs is in its nap: its record holds
// the tool's start.
func napping(t *testing.T, runs string) {
	t.Helper()
	for i := 0; ; i++ {
		recs, _ := filepath.Glob(filepath.Join(runs, "*", "events.jsonl"))
		if len(recs) == 1 {
			if b, _ := os.ReadFile(recs[0]); strings.Contains(string(b), `"tool":"nap"`) {
				return
			}
		}
		if i == 1000 {
			t.Fatal("the run never reached its tool")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stop (a signal, here the context) of fsd mcp serve over stdio
// cancels the runs of calls in flight and waits for them: when it
// returns, their records say interrupted and when they ended. The
// process exited under them, records left 'running'.
func TestMCPServeStdioStopEndsRuns(t *testing.T) {
	t.Parallel()
	dir := slowWorkflow(t)
	runs := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serveMCP(ctx, filepath.Join(dir, "slow.workflow.yaml"), mcpFlags{runFlags: runFlags{runsDir: runs}}, inR, outW, io.Discard)
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go func() { _, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"}) }()
	napping(t, runs)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	// The server's ends of the pipes, so the client's close does not
	// wait on them.
	inR.Close()
	outW.Close()
	recs, _ := filepath.Glob(filepath.Join(runs, "*", "run.json"))
	if len(recs) != 1 {
		t.Fatalf("run records: %v", recs)
	}
	if b, _ := os.ReadFile(recs[0]); !regexp.MustCompile(`"status": ?"interrupted"`).Match(b) || !regexp.MustCompile(`"finished"`).Match(b) {
		t.Errorf("run.json = %.400s", b)
	}
}
