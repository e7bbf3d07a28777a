package a2a_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/serve"
	"github.com/fsdrun/fsd/serve/a2a"
	"github.com/fsdrun/fsd/serve/servetest"
)

func server(t *testing.T, f *servetest.Fake, opts a2a.Options) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(a2a.Handler(f, opts))
	t.Cleanup(s.Close)
	return s
}

type response struct {
	Result json.RawMessage
	Error  *struct {
		Code    int
		Message string
	}
}

func call(t *testing.T, s *httptest.Server, method string, params any) response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	res, err := http.Post(s.URL+"/a2a", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var r response
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

func task(t *testing.T, r response) a2a.Task {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
	}
	var tk a2a.Task
	if err := json.Unmarshal(r.Result, &tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

func text(s string) map[string]any {
	return map[string]any{"kind": "message", "role": "user", "messageId": "m", "parts": []map[string]any{{"kind": "text", "text": s}}}
}

// Y30
func TestCard(t *testing.T) {
	f := &servetest.Fake{Workflow: serve.WorkflowInfo{Name: "wf", Description: "Does.", Version: "1.2.0", Skills: []serve.SkillInfo{{ID: "aa", Name: "Skill aa", Description: "Marks.", Tags: []string{"x"}}}}}
	for _, token := range []bool{false, true} {
		s := server(t, f, a2a.Options{Token: token})
		res, err := http.Get(s.URL + "/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		var card struct {
			ProtocolVersion, Name, Version, URL string
			Capabilities                        struct{ Streaming bool }
			Skills                              []serve.SkillInfo
			SecuritySchemes                     map[string]struct{ Type, Scheme string }
		}
		err = json.NewDecoder(res.Body).Decode(&card)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if card.ProtocolVersion != a2a.ProtocolVersion || card.Name != "wf" || card.Version != "1.2.0" || card.URL != s.URL+"/a2a" || !card.Capabilities.Streaming {
			t.Errorf("card = %+v", card)
		}
		if len(card.Skills) != 1 || card.Skills[0].ID != "aa" || card.Skills[0].Tags[0] != "x" {
			t.Errorf("skills = %+v", card.Skills)
		}
		if got := card.SecuritySchemes["bearer"].Scheme == "bearer"; got != token {
			t.Errorf("token %v: securitySchemes = %+v", token, card.SecuritySchemes)
		}
	}
}

// Y31, Y32
func TestSendAndGet(t *testing.T) {
	s := server(t, &servetest.Fake{}, a2a.Options{})
	tk := task(t, call(t, s, "message/send", map[string]any{"message": text("hi")}))
	if tk.Status.State != a2a.StateCompleted || len(tk.Artifacts) != 1 || tk.Artifacts[0].Parts[0].Text != "echo: hi" || tk.ContextID == "" {
		t.Fatalf("task = %+v", tk)
	}
	m := text("again")
	m["contextId"] = tk.ContextID
	tk2 := task(t, call(t, s, "message/send", map[string]any{"message": m}))
	if tk2.ContextID != tk.ContextID || tk2.ID == tk.ID || tk2.Status.State != a2a.StateCompleted {
		t.Errorf("second task = %+v, want another task of context %s", tk2, tk.ContextID)
	}
	if got := task(t, call(t, s, "tasks/get", map[string]any{"id": tk.ID})); got.Status.State != a2a.StateCompleted || got.ID != tk.ID {
		t.Errorf("tasks/get = %+v", got)
	}
	if r := call(t, s, "tasks/get", map[string]any{"id": "nope"}); r.Error == nil || r.Error.Code != -32001 {
		t.Errorf("tasks/get of no task = %+v", r)
	}
	if r := call(t, s, "tasks/list", map[string]any{}); r.Error == nil || r.Error.Code != -32601 {
		t.Errorf("unknown method = %+v", r)
	}
}

func approving(answers chan<- serve.Answer) *servetest.Fake {
	return &servetest.Fake{Script: func(ctx context.Context, tu *servetest.Turn, m string) (string, error) {
		a, err := tu.Ask(ctx, serve.Approval{CallID: "c1", Tool: "mark", Agent: "host", Args: json.RawMessage(`{"id":"one"}`)})
		if err != nil {
			return "", err
		}
		answers <- a
		return "did " + a.Decision, nil
	}}
}

// Y33
func TestApprovalInputRequired(t *testing.T) {
	answers := make(chan serve.Answer, 2)
	s := server(t, approving(answers), a2a.Options{})
	for _, c := range []struct {
		part   map[string]any
		want   serve.Answer
		answer string
	}{
		{map[string]any{"kind": "data", "data": map[string]any{"decision": "edit", "callId": "c1", "args": map[string]any{"id": "two"}}}, serve.Answer{Decision: "edit", Args: json.RawMessage(`{"id":"two"}`)}, "did edit"},
		{map[string]any{"kind": "text", "text": "reject: not now"}, serve.Answer{Decision: "reject", Reason: "not now"}, "did reject"},
	} {
		tk := task(t, call(t, s, "message/send", map[string]any{"message": text("go")}))
		if tk.Status.State != a2a.StateInputRequired || tk.Status.Message == nil || !strings.Contains(string(tk.Status.Message.Parts[1].Data), `"callId":"c1"`) {
			t.Fatalf("task = %+v, want input-required naming c1", tk)
		}
		m := map[string]any{"kind": "message", "role": "user", "messageId": "m2", "taskId": tk.ID, "contextId": tk.ContextID, "parts": []map[string]any{c.part}}
		done := task(t, call(t, s, "message/send", map[string]any{"message": m}))
		got := <-answers
		if got.Decision != c.want.Decision || got.Reason != c.want.Reason || (c.want.Args != nil && string(got.Args) != string(c.want.Args)) {
			t.Errorf("answer = %+v, want %+v", got, c.want)
		}
		if done.Status.State != a2a.StateCompleted || done.Artifacts[0].Parts[0].Text != c.answer {
			t.Errorf("task after the answer = %+v", done)
		}
		if r := call(t, s, "message/send", map[string]any{"message": m}); r.Error == nil {
			t.Errorf("answering a completed task = %+v, want an error", r)
		}
	}
}

// Y34
func TestCancel(t *testing.T) {
	s := server(t, approving(make(chan serve.Answer, 1)), a2a.Options{})
	tk := task(t, call(t, s, "message/send", map[string]any{"message": text("go")}))
	got := task(t, call(t, s, "tasks/cancel", map[string]any{"id": tk.ID}))
	if got.Status.State != a2a.StateCanceled {
		t.Errorf("cancelled task = %+v", got)
	}
	if r := call(t, s, "tasks/cancel", map[string]any{"id": tk.ID}); r.Error == nil || r.Error.Code != -32002 {
		t.Errorf("cancelling again = %+v, want TaskNotCancelable", r)
	}
}

// Y35
func TestStream(t *testing.T) {
	answers := make(chan serve.Answer, 1)
	s := server(t, approving(answers), a2a.Options{})
	stream := func(m map[string]any) []map[string]any {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "message/stream", "params": map[string]any{"message": m}})
		res, err := http.Post(s.URL+"/a2a", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out []map[string]any
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var r struct{ Result map[string]any }
				if err := json.Unmarshal([]byte(d), &r); err != nil {
					t.Fatal(err)
				}
				out = append(out, r.Result)
			}
		}
		return out
	}
	first := stream(text("go"))
	last := first[len(first)-1]
	if first[0]["kind"] != "task" || last["final"] != true || last["status"].(map[string]any)["state"] != a2a.StateInputRequired {
		t.Fatalf("first stream = %v", first)
	}
	m := map[string]any{"kind": "message", "role": "user", "messageId": "m2", "taskId": first[0]["id"], "parts": []map[string]any{{"kind": "text", "text": "approve"}}}
	second := stream(m)
	last = second[len(second)-1]
	if last["final"] != true || last["status"].(map[string]any)["state"] != a2a.StateCompleted {
		t.Errorf("second stream = %v", second)
	}
	var artifact bool
	for _, e := range second {
		if e["kind"] == "artifact-update" {
			artifact = true
		}
	}
	if a := <-answers; a.Decision != serve.Approve || !artifact {
		t.Errorf("answer %+v, artifact %v", a, artifact)
	}
}

// Y37: a server answering turns for as long as it runs keeps a bounded
// number of ended tasks in memory, and answers tasks/get of an older
// one, or of one a server before it ran, from the session's record.
func TestEndedTasksAreReadBack(t *testing.T) {
	f := &servetest.Fake{}
	h := a2a.Handler(f, a2a.Options{})
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	first := task(t, call(t, s, "message/send", map[string]any{"message": text("first")}))
	const turns = 1100
	for i := 0; i < turns; i++ {
		m := text("more")
		m["contextId"] = first.ContextID
		task(t, call(t, s, "message/send", map[string]any{"message": m}))
	}
	if n := a2a.Kept(h); n > 1000 {
		t.Errorf("the handler keeps %d tasks after %d ended turns, want at most 1000", n, turns+1)
	}
	check := func(s *httptest.Server, who string) {
		got := task(t, call(t, s, "tasks/get", map[string]any{"id": first.ID}))
		if got.ID != first.ID || got.ContextID != first.ContextID || got.Status.State != a2a.StateCompleted ||
			len(got.Artifacts) != 1 || got.Artifacts[0].Parts[0].Text != "echo: first" {
			t.Errorf("%s: tasks/get of the first task = %+v, want it completed with its answer", who, got)
		}
		if r := call(t, s, "tasks/cancel", map[string]any{"id": first.ID}); r.Error == nil || r.Error.Code != -32002 {
			t.Errorf("%s: cancelling the ended first task = %+v, want TaskNotCancelable", who, r)
		}
	}
	check(s, "the same server")
	restarted := server(t, f, a2a.Options{})
	check(restarted, "a new server")
	for _, id := range []string{first.ContextID + ":9999", "nope:1", first.ContextID + ":0", first.ContextID, ":1"} {
		if r := call(t, restarted, "tasks/get", map[string]any{"id": id}); r.Error == nil || r.Error.Code != -32001 {
			t.Errorf("tasks/get %q = %+v, want TaskNotFound", id, r)
		}
	}
}

// Y37: a turn running that this handler did not start (the web chat's,
// AG-UI's) is not found, at once, rather than followed until it ends —
// one waiting for an approval might never end.
func TestRunningTurnElsewhereIsNotWaitedFor(t *testing.T) {
	f := approving(make(chan serve.Answer, 1))
	if _, err := f.Send(context.Background(), "elsewhere", "go"); err != nil {
		t.Fatal(err)
	}
	s := server(t, f, a2a.Options{})
	for _, id := range []string{"elsewhere:1", "elsewhere:2"} {
		if r := call(t, s, "tasks/get", map[string]any{"id": id}); r.Error == nil || r.Error.Code != -32001 {
			t.Errorf("tasks/get %s of a turn running elsewhere = %+v, want TaskNotFound", id, r)
		}
	}
	if err := f.Cancel("elsewhere"); err != nil {
		t.Fatal(err)
	}
	if err := f.Wait(context.Background(), "elsewhere"); err != nil {
		t.Fatal(err)
	}
	if got := task(t, call(t, s, "tasks/get", map[string]any{"id": "elsewhere:1"})); got.Status.State != a2a.StateCanceled {
		t.Errorf("tasks/get of the turn once cancelled = %+v, want canceled", got)
	}
}

// A body over the server's cap gets 413, as it does from the API, even
// sent without a Content-Length the guard can refuse up front — not a
// JSON-RPC parse error saying the body is not JSON.
func TestBodyTooLarge(t *testing.T) {
	s := httptest.NewServer(http.MaxBytesHandler(a2a.Handler(&servetest.Fake{}, a2a.Options{}), 64))
	defer s.Close()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{"message": text(strings.Repeat("x", 200))}})
	resp, err := http.Post(s.URL+"/a2a", "application/json", io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("%d %s, want 413", resp.StatusCode, b)
	}
}

// An answer naming a callId that does not wait is an error, not the
// task answered back unchanged as if the answer had been taken; and a
// call of the host (whose approvals carry no agent) is said to be the
// host's.
func TestAnswerToNoSuchCall(t *testing.T) {
	answers := make(chan serve.Answer, 1)
	s := server(t, &servetest.Fake{Script: func(ctx context.Context, tu *servetest.Turn, m string) (string, error) {
		a, err := tu.Ask(ctx, serve.Approval{CallID: "c1", Tool: "mark", Args: json.RawMessage(`{}`)})
		if err != nil {
			return "", err
		}
		answers <- a
		return "did " + a.Decision, nil
	}}, a2a.Options{})
	tk := task(t, call(t, s, "message/send", map[string]any{"message": text("go")}))
	if tk.Status.State != a2a.StateInputRequired || !strings.HasPrefix(tk.Status.Message.Parts[0].Text, "host wants to call mark") {
		t.Fatalf("task = %+v, want input-required saying the host wants to call mark", tk)
	}
	m := map[string]any{"kind": "message", "role": "user", "messageId": "m2", "taskId": tk.ID, "contextId": tk.ContextID,
		"parts": []map[string]any{{"kind": "data", "data": map[string]any{"decision": "approve", "callId": "typo"}}}}
	if r := call(t, s, "message/send", map[string]any{"message": m}); r.Error == nil || !strings.Contains(r.Error.Message, "typo") {
		t.Errorf("an answer to call typo = %s %+v, want an error naming it", r.Result, r.Error)
	}
	if len(answers) != 0 {
		t.Errorf("the call was answered: %+v", <-answers)
	}
	call(t, s, "tasks/cancel", map[string]any{"id": tk.ID})
}
