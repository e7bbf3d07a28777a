package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/openai"
	"github.com/fsdrun/fsd/model/retry"
	"github.com/fsdrun/fsd/spec"
)

// assistantStates lists the provider state on each assistant message of
// req, "" where there is none.
func assistantStates(req *model.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role != model.Assistant {
			continue
		}
		s := ""
		if m.State != nil {
			s = m.State.Model + " " + string(m.State.Data)
		}
		out = append(out, s)
	}
	return out
}

// A response's provider state stays on the assistant message it becomes:
// the next step's request carries it, and so does the same step's
// request after a resume, which replays the first step from the journal.
func TestProviderStateKeptAcrossStepsAndResume(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	state := &model.State{Model: "openai-responses/m", Data: json.RawMessage(`[{"type":"reasoning","id":"rs_1"}]`)}
	want := "openai-responses/m " + string(state.Data)
	down := errors.New("503 service unavailable")
	var step1 []string
	first := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step == 0 {
			resp := read("aa")(req)
			resp.State = state
			return resp, nil
		}
		step1 = assistantStates(req)
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
	if len(step1) != 1 || step1[0] != want {
		t.Errorf("step 2 of the first run: assistant states %q, want [%q]", step1, want)
	}

	j, err := LoadReplay(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var resumed []string
	second := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step == 0 {
			t.Error("the journaled step 1 was asked for again")
		}
		resumed = assistantStates(req)
		return &model.Response{Text: "done"}, nil
	})
	r2, err := New(p, Options{Model: second, Resume: j})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if len(resumed) != 1 || resumed[0] != want {
		t.Errorf("step 2 after the resume: assistant states %q, want [%q]", resumed, want)
	}
}

// The Responses API end to end: step 1's encrypted reasoning item goes
// back to the API with step 2's request, and so it does after the run
// stopped at step 2 (the API was down) and resumed from its journal. The
// server is the only memory besides the journal, and it keeps nothing
// (store false).
func TestResponsesReasoningSurvivesResume(t *testing.T) {
	step1 := `{"id":"resp_1","object":"response","status":"completed","output":[` +
		`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAB-step-1"},` +
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_skill","arguments":"{\"id\":\"aa\"}","status":"completed"}],` +
		`"usage":{"input_tokens":50,"output_tokens":20,"output_tokens_details":{"reasoning_tokens":12}}}`
	done := `{"id":"resp_2","object":"response","status":"completed","output":[` +
		`{"type":"message","id":"msg_2","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}]}`
	var mu sync.Mutex
	var bodies [][]byte
	replies := []string{step1, "", done} // "": the API is down
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, b)
		mu.Unlock()
		if n >= len(replies) || replies[n] == "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"message":"down"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, replies[n])
	}))
	defer srv.Close()
	m, err := openai.NewResponses(openai.Config{Model: "gpt-test", APIKey: "sk-test-123456", BaseURL: srv.URL, Retry: retry.Policy{MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	r, err := New(p, Options{Model: m, RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("first run: %v, want the 503", err)
	}
	j, err := LoadReplay(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := New(p, Options{Model: m, Resume: j})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := r2.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if res2.Answer != "done" {
		t.Errorf("answer %q", res2.Answer)
	}
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 3 (step 1, step 2 refused, step 2 after the resume)", len(bodies))
	}
	for i, b := range bodies[1:] {
		var body struct {
			Store bool             `json:"store"`
			Input []map[string]any `json:"input"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, it := range body.Input {
			kinds = append(kinds, fmt.Sprintf("%v %v %v", it["type"], it["id"], it["encrypted_content"]))
		}
		// The task, step 1's reasoning and call, its result, the line
		// saying the skill was loaded.
		want := []string{"message <nil> <nil>", "reasoning rs_1 gAAAAB-step-1", "function_call fc_1 <nil>", "function_call_output <nil> <nil>", "message <nil> <nil>"}
		if body.Store || !slices.Equal(kinds, want) {
			t.Errorf("step 2 request %d (of the first run, then the resumed one): store %v, input %q, want %q", i+1, body.Store, kinds, want)
		}
	}
}

// A reasoning model's reasoning tokens are part of its output tokens, as
// the providers count them: they cost the output price once, not twice.
func TestReasoningTokensPricedAsOutput(t *testing.T) {
	testpar.UnlessRace(t)
	a := &account{prices: map[string]spec.Price{"openai-responses/m": {Input: 1, Output: 10}}}
	plain := a.cost("openai-responses/m", model.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000})
	reasoning := a.cost("openai-responses/m", model.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, ReasoningTokens: 800_000})
	if plain != 11 || reasoning != plain {
		t.Errorf("cost %v without reasoning tokens, %v with 800k of the output reasoning; want 11 both", plain, reasoning)
	}
}
