package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/serve"
	"github.com/fsdrun/fsd/spec"
)

// steps is a model answering each request with the next step, across
// turns; a step may block the turn until the test lets it go.
type steps struct {
	mu   sync.Mutex
	next []func(ctx context.Context) (*model.Response, error)
}

func (s *steps) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	s.mu.Lock()
	if len(s.next) == 0 {
		s.mu.Unlock()
		return &model.Response{Text: "no more steps"}, nil
	}
	f := s.next[0]
	s.next = s.next[1:]
	s.mu.Unlock()
	return f(ctx)
}

func call(name, args string) func(context.Context) (*model.Response, error) {
	return func(context.Context) (*model.Response, error) {
		return &model.Response{Calls: []model.ToolCall{{ID: "c-" + name, Name: name, Args: json.RawMessage(args)}}}, nil
	}
}

func say(text string) func(context.Context) (*model.Response, error) {
	return func(context.Context) (*model.Response, error) { return &model.Response{Text: text}, nil }
}

// wait blocks the turn until gate closes.
func wait(gate chan struct{}, then func(context.Context) (*model.Response, error)) func(context.Context) (*model.Response, error) {
	return func(ctx context.Context) (*model.Response, error) {
		select {
		case <-gate:
			return then(ctx)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// project writes a workflow with a host and skill aa: mark (appends its
// id to marks.log) and risky (asks for approval first).
func project(t testing.TB) (*spec.Project, string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"chat.workflow.yaml": "name: chat\nskills: [./skills]\nsandbox: {write: [./box]}\nhost: {prompt: You chat.}\n",
		"box/.keep":          "",
		"skills/aa/aa.skill.yaml": `id: aa
name: Skill aa
description: Marks things.
version: 1.0.0
instructions: Mark things.
tools:
  - name: mark
    description: Marks.
    input: {type: object, properties: {id: {type: string}}, required: [id]}
    run: {command: [sh, -c, 'echo "$0" >> ` + filepath.Join(dir, "box", "marks.log") + `; printf marked', "{{.id}}"]}
  - name: risky
    description: Needs a yes.
    approve: always
    input: {type: object, properties: {}}
    run: {command: [sh, -c, 'printf done']}
agents:
  quiet:
    description: Works out of the client's sight.
    prompt: Work.
    item-visibility: {client: false, history: false}
    tools: [mark]
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, diags := spec.LoadProject(filepath.Join(dir, "chat.workflow.yaml"))
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	return p, dir
}

// newServer serves p's sessions under dir with m.
func newServer(t testing.TB, p *spec.Project, dir string, m model.Model) (*serve.Server, *httptest.Server) {
	t.Helper()
	srv := serve.New(serve.Config{SessionsDir: filepath.Join(dir, "sessions"), Workflow: serve.WorkflowInfo{Name: p.Workflow.Name},
		Start: func(s *engine.Session, sink event.Sink) (*engine.Run, func(error) error, error) {
			r, err := s.Start(p, engine.Options{Model: m, Sink: sink, Approve: approval.Ask})
			return r, func(err error) error { return err }, err
		}})
	hs := httptest.NewServer(srv.Handler(serve.Mounts{}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		hs.Close()
	})
	return srv, hs
}

// sse is one event read from a stream.
type sse struct {
	id   string
	name string
	data string
}

// stream reads a session's event stream from after (-1: no
// Last-Event-ID) and sends each event on the channel it returns, which
// closes at the stream's end; cancel drops the connection.
func stream(t *testing.T, base, session string, after int) (<-chan sse, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/sessions/"+session+"/events", nil)
	if after >= 0 {
		req.Header.Set("Last-Event-ID", fmt.Sprint(after))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("events: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	out := make(chan sse)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var e sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
				e = sse{}
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	return out, cancel
}

func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Y2: a client that drops the stream mid-turn and reconnects with
// Last-Event-ID gets every event after the last it got, none twice, and
// the ids it saw live are the record's: a stream from the record alone
// (a restarted server) numbers them the same.
func TestSSEReconnectMidTurn(t *testing.T) {
	p, dir := project(t)
	gate := make(chan struct{})
	m := &steps{next: []func(context.Context) (*model.Response, error){
		call("read_skill", `{"id":"aa"}`),
		call("mark", `{"id":"one"}`),
		wait(gate, call("risky", `{}`)),
		say("done"),
	}}
	_, hs := newServer(t, p, dir, m)
	if code, b := post(t, hs.URL+"/sessions", `{"id":"s","message":"go"}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	var got []sse
	first, drop := stream(t, hs.URL, "s", -1)
	for e := range first {
		got = append(got, e)
		if e.name == event.ToolResult && strings.Contains(e.data, `"tool":"mark"`) {
			break // the turn waits at the gate now
		}
	}
	drop()
	for range first {
	}
	if len(got) == 0 {
		t.Fatal("no event before the drop")
	}
	close(gate)
	second, stop := stream(t, hs.URL, "s", atoi(t, got[len(got)-1].id))
	defer stop()
	ended := false
	for e := range second {
		if e.name == "end" {
			ended = true
			break
		}
		got = append(got, e)
		if e.name == event.ApprovalRequested {
			var ev struct {
				Approval string `json:"approval"`
			}
			_ = json.Unmarshal([]byte(e.data), &ev)
			if code, b := post(t, hs.URL+"/sessions/s/approvals/"+ev.Approval, `{"decision":"approve"}`); code != http.StatusNoContent {
				t.Fatalf("answer: %d %s", code, b)
			}
		}
	}
	if !ended {
		t.Fatal("the stream closed without its end event")
	}
	if !strings.Contains(strings.Join(names(got), " "), event.ApprovalAnswered) {
		t.Errorf("no approval answered mid-turn: %v", names(got))
	}
	for i, e := range got {
		if e.id != fmt.Sprint(i+1) {
			t.Fatalf("event %d has id %s: lost or repeated across the reconnect (%v)", i+1, e.id, names(got))
		}
	}
	if last := got[len(got)-1]; last.name != event.RunFinished {
		t.Errorf("last event %s, want run.finished", last.name)
	}
	// The record numbers them as the live stream did.
	replay, stop2 := stream(t, hs.URL, "s", 0)
	defer stop2()
	var rec []sse
	for e := range replay {
		if e.name != "end" {
			rec = append(rec, e)
		}
	}
	if len(rec) != len(got) {
		t.Fatalf("the record holds %d events, the live stream sent %d", len(rec), len(got))
	}
	for i := range rec {
		if rec[i] != got[i] {
			t.Fatalf("event %d: record %+v, live %+v", i+1, rec[i], got[i])
		}
	}
}

func atoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("id %q: %v", s, err)
	}
	return n
}

func names(es []sse) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.id+":"+e.name)
	}
	return out
}

// Y4: one turn per session: a message while a turn runs is refused 409.
func TestOneTurnPerSession(t *testing.T) {
	p, dir := project(t)
	gate := make(chan struct{})
	m := &steps{next: []func(context.Context) (*model.Response, error){wait(gate, say("one")), say("two")}}
	srv, hs := newServer(t, p, dir, m)
	if code, b := post(t, hs.URL+"/sessions/s/messages", `{"message":"first"}`); code != http.StatusAccepted {
		t.Fatalf("first message: %d %s", code, b)
	}
	if code, b := post(t, hs.URL+"/sessions/s/messages", `{"message":"second"}`); code != http.StatusConflict {
		t.Fatalf("second message while the first runs: %d %s, want 409", code, b)
	}
	close(gate)
	if err := srv.Wait(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	if code, b := post(t, hs.URL+"/sessions/s/messages", `{"message":"second"}`); code != http.StatusAccepted {
		t.Fatalf("second message after the first: %d %s", code, b)
	}
	if err := srv.Wait(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
}

var _ = bytes.MinRead

// Y7, Y8: Close stops a turn that waits for an approval where a resume
// goes on from; a server started again over the sessions resumes it
// (RecoverAll), the call asks again under the same id, and answering it
// there finishes the turn.
func TestCloseThenRecoverKeepsApprovalsAnswerable(t *testing.T) {
	p, dir := project(t)
	m := &steps{next: []func(context.Context) (*model.Response, error){
		call("read_skill", `{"id":"aa"}`),
		call("risky", `{}`),
		say("done"),
	}}
	srv, hs := newServer(t, p, dir, m)
	if code, b := post(t, hs.URL+"/sessions", `{"id":"s","message":"go"}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	events, stop := stream(t, hs.URL, "s", -1)
	var asked string
	for e := range events {
		if e.name == event.ApprovalRequested {
			var ev struct {
				Approval string `json:"approval"`
			}
			_ = json.Unmarshal([]byte(e.data), &ev)
			asked = ev.Approval
			break
		}
	}
	stop()
	if asked == "" {
		t.Fatal("no approval asked")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := srv.Session("s"); info.Status != "interrupted" {
		t.Fatalf("after Close the session is %q, want interrupted", info.Status)
	}
	if _, err := srv.Send(ctx, "s", "more"); err == nil {
		t.Fatal("a closed server started a turn")
	}
	// The model answers the resumed turn's remaining steps; the steps
	// before the stop come from the journal.
	srv2, _ := newServer(t, p, dir, m)
	rec := srv2.RecoverAll()
	if len(rec) != 1 || rec[0].Session != "s" || rec[0].Err != nil {
		t.Fatalf("RecoverAll = %+v, want session s resumed", rec)
	}
	var pending []serve.Approval
	ch, _ := srv2.Events(ctx, "s", 0)
	n := 0
	for e := range ch {
		if e.Type == event.ApprovalRequested {
			if n++; n == 2 { // asked again by the resumed turn
				pending, _ = srv2.Pending("s")
				if err := srv2.Answer("s", e.Approval, serve.Answer{Decision: serve.Approve}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if len(pending) != 1 || pending[0].CallID != asked {
		t.Fatalf("pending after the restart = %+v, want call %s", pending, asked)
	}
	if err := srv2.Wait(ctx, "s"); err != nil {
		t.Fatalf("the resumed turn: %v", err)
	}
	if info, _ := srv2.Session("s"); info.Status != "finished" {
		t.Errorf("the resumed turn ended %q, want finished", info.Status)
	}
}

// Y8: what streams follows item-visibility.client, as the live board: a
// worker with client: false shows its task's lifecycle, never its text
// or its calls.
func TestClientFalseWorkerStreamsOnlyItsTask(t *testing.T) {
	p, dir := project(t)
	m := &steps{next: []func(context.Context) (*model.Response, error){
		call("read_skill", `{"id":"aa"}`),
		call("addTask", `{"id":"t1","goal":"work","assignee":"quiet"}`),
		call("runBoard", `{}`),
		call("mark", `{"id":"w"}`), // the worker's
		say("worker's secret"),     // the worker's
		say("done"),
	}}
	srv, _ := newServer(t, p, dir, m)
	ctx := context.Background()
	if _, err := srv.Send(ctx, "s", "go"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	ch, err := srv.Events(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	var task []string
	for e := range ch {
		if e.Task == "" {
			continue
		}
		task = append(task, e.Type)
		if e.Type == event.Text || e.Type == event.ToolCall || e.Type == event.ToolResult {
			t.Errorf("the client: false worker's %s streamed: %+v", e.Type, e.Event)
		}
	}
	if !slices.Contains(task, event.TaskStarted) || !slices.Contains(task, event.TaskCompleted) {
		t.Errorf("the worker's task events = %v, want its lifecycle", task)
	}
	marks, _ := os.ReadFile(filepath.Join(dir, "box", "marks.log"))
	if strings.TrimSpace(string(marks)) != "w" {
		t.Errorf("the worker did not run its call: marks.log = %q", marks)
	}
}

// A body the API cannot take gets 400 with a reason a client reads: no
// Go type names, and nothing after the object is silently dropped. A
// session that exists and runs nothing is not called busy.
func TestBadBodiesAndExistingSession(t *testing.T) {
	p, dir := project(t)
	srv, hs := newServer(t, p, dir, &steps{next: []func(context.Context) (*model.Response, error){say("hi")}})
	for _, body := range []string{`[1,2]`, `{"message": 5}`, `{"message":"a"} {"message":"b"}`, `{"message":"a"}x`, `null`} {
		code, b := post(t, hs.URL+"/sessions/s/messages", body)
		if code != http.StatusBadRequest || strings.Contains(string(b), "Go value") || strings.Contains(string(b), "struct") {
			t.Errorf("body %s: %d %s, want 400 with a readable reason", body, code, b)
		}
	}
	if code, b := post(t, hs.URL+"/sessions", `{"id":"s","message":"first"}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	if err := srv.Wait(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	code, b := post(t, hs.URL+"/sessions", `{"id":"s"}`)
	if code != http.StatusConflict || strings.Contains(string(b), "turn running") {
		t.Errorf("create an idle session again: %d %s, want 409 saying it exists", code, b)
	}
	// null is no object: it does not create a session with a fresh name.
	if code, b := post(t, hs.URL+"/sessions", `null`); code != http.StatusBadRequest {
		t.Errorf("create with body null: %d %s, want 400", code, b)
	}
}

// An edit's arguments are a JSON object, as fsd approve --edit wants:
// anything else is the client's mistake (400), not an approval the
// tool then fails on.
func TestEditWantsAnObject(t *testing.T) {
	p, dir := project(t)
	srv, _ := newServer(t, p, dir, &steps{})
	for _, args := range []string{`"x"`, `[1]`, `null`, `5`} {
		err := srv.Answer("s", "c1", serve.Answer{Decision: serve.Edit, Args: json.RawMessage(args)})
		if !errors.Is(err, serve.ErrInvalid) {
			t.Errorf("edit with args %s: %v, want an invalid request", args, err)
		}
	}
}

// A session whose session.json cannot be read is listed as damaged, not
// as finished with no turns: its turns are not lost without a word.
func TestDamagedSessionSaysSo(t *testing.T) {
	p, dir := project(t)
	srv, hs := newServer(t, p, dir, &steps{next: []func(context.Context) (*model.Response, error){say("hi")}})
	if code, b := post(t, hs.URL+"/sessions", `{"id":"s","message":"first"}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	if err := srv.Wait(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessions", "s", "session.json"), []byte("garbage{"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := srv.Session("s")
	if err != nil || info.Status != "damaged" {
		t.Errorf("a session with an unreadable session.json: %+v, %v; want status damaged", info, err)
	}
	// Its turn is not "not found" in a session said to have none.
	resp, err := http.Get(hs.URL + "/sessions/s/turns/1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), "session.json") {
		t.Errorf("turn 1 of the damaged session: %s %s, want 500 naming session.json", resp.Status, b)
	}
}

// Recorded streams the turns that have ended and closes, never waiting
// for the turn running at the call (Y37: what the A2A handler reads an
// ended task back from).
func TestRecordedLeavesTheRunningTurn(t *testing.T) {
	p, dir := project(t)
	gate := make(chan struct{})
	srv, _ := newServer(t, p, dir, &steps{next: []func(context.Context) (*model.Response, error){say("one"), wait(gate, say("two"))}})
	ctx := context.Background()
	if _, err := srv.Send(ctx, "s", "first"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Send(ctx, "s", "second"); err != nil {
		t.Fatal(err)
	}
	ch, err := srv.Recorded(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	var finished int
	for e := range ch { // closes although turn 2 runs
		if e.Turn != 1 {
			t.Errorf("Recorded sent an event of turn %d: %+v", e.Turn, e.Event)
		}
		if e.Type == event.RunFinished {
			finished++
		}
	}
	if finished != 1 {
		t.Errorf("Recorded sent %d ends of turn 1, want 1", finished)
	}
	close(gate)
	if err := srv.Wait(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Recorded(ctx, "nope", 0); !errors.Is(err, serve.ErrNotFound) {
		t.Errorf("Recorded of no session: %v, want ErrNotFound", err)
	}
}

// The web view's catch-all does not swallow the API's paths: a wrong
// method on one gets 405 with Allow, an unknown route under /sessions
// 404, both as the API's JSON errors, not the web view's "404 page not
// found".
func TestWrongMethodBesideTheWebView(t *testing.T) {
	p, dir := project(t)
	srv := serve.New(serve.Config{SessionsDir: filepath.Join(dir, "sessions"), Workflow: serve.WorkflowInfo{Name: p.Workflow.Name}})
	web := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "web") })
	hs := httptest.NewServer(srv.Handler(serve.Mounts{Web: web}))
	defer hs.Close()
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{"PUT", "/sessions", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{"DELETE", "/sessions/s", http.StatusMethodNotAllowed, "GET, HEAD"},
		{"GET", "/sessions/s/messages", http.StatusMethodNotAllowed, "POST"},
		{"POST", "/openapi.json", http.StatusMethodNotAllowed, "GET, HEAD"},
		{"GET", "/sessions/s/nothing", http.StatusNotFound, ""},
	} {
		req, _ := http.NewRequest(c.method, hs.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != c.code || err != nil || e.Error == "" || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %s, Allow %q, error %q (%v); want %d, Allow %q and a JSON error", c.method, c.path, resp.Status, resp.Header.Get("Allow"), e.Error, err, c.code, c.allow)
		}
	}
	if code, b := post(t, hs.URL+"/sessions/s/messages", `{}`); code != http.StatusBadRequest || !strings.Contains(string(b), "empty") {
		t.Errorf("POST /sessions/s/messages {}: %d %s, want 400: the message is empty", code, b)
	}
	resp, err := http.Get(hs.URL + "/run/s")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "web" {
		t.Errorf("GET /run/s: %q, want the web view's page", b)
	}
}
