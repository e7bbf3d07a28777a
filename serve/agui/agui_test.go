package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/serve"
	"github.com/fsdrun/fsd/serve/agui"
	"github.com/fsdrun/fsd/serve/servetest"
)

// post runs one AG-UI run against h and returns its events.
func post(t *testing.T, url string, body string) []map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

func types(evs []map[string]any) string {
	var s []string
	for _, e := range evs {
		s = append(s, e["type"].(string))
	}
	return strings.Join(s, " ")
}

func input(thread, run, text string) string {
	b, _ := json.Marshal(map[string]any{"threadId": thread, "runId": run, "state": map[string]any{}, "tools": []any{}, "context": []any{},
		"messages": []any{map[string]any{"id": "u1", "role": "user", "content": text}}})
	return string(b)
}

func server(t *testing.T, f *servetest.Fake) string {
	t.Helper()
	s := httptest.NewServer(agui.Handler(f, agui.Options{}))
	t.Cleanup(s.Close)
	return s.URL + "/agui"
}

// Y20: a turn's text, tool calls and board tasks map to AG-UI's events in
// order, framed by RUN_STARTED and RUN_FINISHED with the answer.
func TestRunMapsATurn(t *testing.T) {
	f := &servetest.Fake{Script: func(ctx context.Context, tr *servetest.Turn, m string) (string, error) {
		tr.Emit(event.Event{Type: event.Text, Agent: "host", Text: "Look", Delta: true})
		tr.Emit(event.Event{Type: event.Text, Agent: "host", Text: "ing.", Delta: true})
		tr.Emit(event.Event{Type: event.Text, Agent: "host", Text: "Looking."})
		tr.Emit(event.Event{Type: event.ToolCall, Agent: "host", Tool: "grep", CallID: "c1", Args: json.RawMessage(`{"q":"x"}`)})
		tr.Emit(event.Event{Type: event.ToolResult, Agent: "host", Tool: "grep", CallID: "c1", Result: "found"})
		tr.Emit(event.Event{Type: event.TaskAdded, Task: "t/1", Goal: "dig", Agent: "worker"})
		tr.Emit(event.Event{Type: event.TaskStarted, Task: "t/1", Agent: "worker"})
		tr.Emit(event.Event{Type: event.TaskCompleted, Task: "t/1", Agent: "worker", Result: "dug"})
		tr.Emit(event.Event{Type: event.Text, Agent: "host", Text: "Done."})
		return "Done.", nil
	}}
	evs := post(t, server(t, f), input("th", "r1", "hi"))
	want := "RUN_STARTED STATE_SNAPSHOT TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END " +
		"TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END TOOL_CALL_RESULT STATE_DELTA STATE_DELTA STEP_STARTED STATE_DELTA STEP_FINISHED " +
		"TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_FINISHED"
	if got := types(evs); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	if evs[0]["threadId"] != "th" || evs[0]["runId"] != "r1" {
		t.Errorf("RUN_STARTED %v", evs[0])
	}
	if evs[6]["toolCallId"] != "c1" || evs[6]["toolCallName"] != "grep" || evs[7]["delta"] != `{"q":"x"}` {
		t.Errorf("tool call %v %v", evs[6], evs[7])
	}
	if evs[9]["content"] != "found" || evs[9]["toolCallId"] != "c1" || evs[9]["messageId"] == "" {
		t.Errorf("TOOL_CALL_RESULT %v", evs[9])
	}
	d, _ := json.Marshal(evs[10]["delta"])
	if string(d) != `[{"op":"add","path":"/tasks/t~11","value":{"agent":"worker","goal":"dig","status":"pending"}}]` {
		t.Errorf("STATE_DELTA %s", d)
	}
	if evs[12]["stepName"] != "t/1" || evs[14]["stepName"] != "t/1" {
		t.Errorf("steps %v %v", evs[12], evs[14])
	}
	end := evs[len(evs)-1]
	if end["result"] != "Done." || end["outcome"].(map[string]any)["type"] != "success" {
		t.Errorf("RUN_FINISHED %v", end)
	}
}

// Y21: an approval ends the AG-UI run with an interrupt; the next run's
// resume answers it and streams the rest of the turn.
func TestApprovalIsAnInterrupt(t *testing.T) {
	answers := make(chan serve.Answer, 1)
	f := &servetest.Fake{Script: func(ctx context.Context, tr *servetest.Turn, m string) (string, error) {
		tr.Emit(event.Event{Type: event.ToolCall, Agent: "host", Tool: "rm", CallID: "c9", Args: json.RawMessage(`{"path":"a"}`)})
		a, err := tr.Ask(ctx, serve.Approval{CallID: "c9", Tool: "rm", Agent: "host", Args: json.RawMessage(`{"path":"a"}`)})
		if err != nil {
			return "", err
		}
		answers <- a
		tr.Emit(event.Event{Type: event.ToolResult, Agent: "host", Tool: "rm", CallID: "c9", Result: "removed"})
		return "ok", nil
	}}
	url := server(t, f)
	evs := post(t, url, input("th", "r1", "go"))
	if got := types(evs); got != "RUN_STARTED STATE_SNAPSHOT TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END RUN_FINISHED" {
		t.Fatalf("first run: %s", got)
	}
	out := evs[len(evs)-1]["outcome"].(map[string]any)
	ints := out["interrupts"].([]any)
	in := ints[0].(map[string]any)
	if out["type"] != "interrupt" || len(ints) != 1 || in["id"] != "c9" || in["toolCallId"] != "c9" || in["reason"] != agui.InterruptReason {
		t.Fatalf("outcome %v", out)
	}
	resume := `{"threadId":"th","runId":"r2","messages":[],"tools":[],"context":[],"resume":[{"interruptId":"c9","status":"resolved","payload":{"decision":"edit","args":{"path":"b"}}}]}`
	evs = post(t, url, resume)
	if got := types(evs); got != "RUN_STARTED STATE_SNAPSHOT TOOL_CALL_RESULT RUN_FINISHED" {
		t.Fatalf("resumed run: %s", got)
	}
	if a := <-answers; a.Decision != serve.Edit || string(a.Args) != `{"path":"b"}` {
		t.Errorf("answer %+v", a)
	}
	if evs[len(evs)-1]["runId"] != "r2" || evs[len(evs)-1]["result"] != "ok" {
		t.Errorf("end %v", evs[len(evs)-1])
	}
}

// Y22: what the backend refuses ends the run with RUN_ERROR, never a
// broken stream: a busy session, a failed turn, an unknown interrupt.
func TestErrorsAreRunErrors(t *testing.T) {
	release := make(chan struct{})
	f := &servetest.Fake{Script: func(ctx context.Context, tr *servetest.Turn, m string) (string, error) {
		if m == "fail" {
			return "", errors.New("the model is down")
		}
		<-release
		return "late", nil
	}}
	url := server(t, f)
	if _, err := f.Send(context.Background(), "busy", "wait"); err != nil {
		t.Fatal(err)
	}
	evs := post(t, url, input("busy", "r1", "again"))
	close(release)
	if types(evs) != "RUN_STARTED RUN_ERROR" || evs[1]["code"] != "busy" {
		t.Errorf("busy: %v", evs)
	}
	evs = post(t, url, input("other", "r1", "fail"))
	if got := types(evs); got != "RUN_STARTED STATE_SNAPSHOT RUN_ERROR" || evs[2]["message"] != "the model is down" {
		t.Errorf("failed turn: %v", evs)
	}
	evs = post(t, url, `{"threadId":"other","runId":"r2","messages":[],"resume":[{"interruptId":"nope","status":"resolved"}]}`)
	if types(evs) != "RUN_STARTED RUN_ERROR" || evs[1]["code"] != "not_found" {
		t.Errorf("unknown interrupt: %v", evs)
	}
	evs = post(t, url, `{"threadId":"other","runId":"r3","messages":[{"id":"a","role":"assistant","content":"hi"}]}`)
	if types(evs) != "RUN_STARTED RUN_ERROR" || evs[1]["code"] != "invalid_input" {
		t.Errorf("no user message: %v", evs)
	}
}

// A body over the server's cap gets 413, as it does from the API, even
// sent without a Content-Length the guard can refuse up front; a body
// that is not a RunAgentInput gets 400 with no Go type in its reason.
func TestBodyTooLargeOrNotAnInput(t *testing.T) {
	s := httptest.NewServer(http.MaxBytesHandler(agui.Handler(&servetest.Fake{}, agui.Options{}), 64))
	defer s.Close()
	for _, c := range []struct {
		body io.Reader
		code int
	}{
		{io.MultiReader(strings.NewReader(input("t", "r", strings.Repeat("x", 200)))), http.StatusRequestEntityTooLarge},
		{strings.NewReader(`[1]`), http.StatusBadRequest},
	} {
		resp, err := http.Post(s.URL+"/agui", "application/json", c.body)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || strings.Contains(string(b), "Go value") {
			t.Errorf("%d %s, want %d with a readable reason", resp.StatusCode, b, c.code)
		}
	}
}

// A resume answers all its interrupts or none: one it cannot take (an
// unknown decision, an interrupt not waiting, the same one twice) ends
// the run with RUN_ERROR before any is answered, so the client's
// corrected resume, which sends them all again, finds them all waiting.
func TestResumeAnswersAllOrNone(t *testing.T) {
	f := &servetest.Fake{Script: func(ctx context.Context, tr *servetest.Turn, m string) (string, error) {
		errs := make(chan error, 2)
		for _, id := range []string{"c1", "c2"} {
			go func() {
				_, err := tr.Ask(ctx, serve.Approval{CallID: id, Tool: "rm", Agent: "host", Args: json.RawMessage(`{}`)})
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				return "", err
			}
		}
		return "ok", nil
	}}
	url := server(t, f)
	if _, err := f.Send(context.Background(), "th", "go"); err != nil {
		t.Fatal(err)
	}
	for {
		if p, _ := f.Pending("th"); len(p) == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	approve := `{"interruptId":"c1","status":"resolved","payload":{"decision":"approve"}}`
	for _, second := range []string{
		`{"interruptId":"c2","status":"resolved","payload":{"decision":"nah"}}`,
		`{"interruptId":"c2","status":"resolved","payload":{"decision":"edit","args":"x"}}`,
		`{"interruptId":"zz","status":"resolved"}`,
		approve,
	} {
		evs := post(t, url, `{"threadId":"th","runId":"r","messages":[],"resume":[`+approve+`,`+second+`]}`)
		if types(evs) != "RUN_STARTED RUN_ERROR" {
			t.Errorf("resume with %s: %s, want RUN_ERROR", second, types(evs))
		}
		if p, _ := f.Pending("th"); len(p) != 2 {
			t.Fatalf("resume with %s answered part of it: %d calls still wait, want 2", second, len(p))
		}
	}
	evs := post(t, url, `{"threadId":"th","runId":"r","messages":[],"resume":[`+approve+`,{"interruptId":"c2","status":"cancelled"}]}`)
	if last := evs[len(evs)-1]; last["type"] != "RUN_FINISHED" || last["result"] != "ok" {
		t.Errorf("the corrected resume: %s %v", types(evs), last)
	}
}
