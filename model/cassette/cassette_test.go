package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
)

const secret = "sk-live-SECRET-0123456789"

// echo answers with text naming the caller and its call count, so a reply
// served to the wrong caller or out of order is visible.
func echo() model.Model {
	var mu sync.Mutex
	n := map[string]int{}
	return model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		k := req.Caller.Agent + "/" + req.Caller.TaskID
		n[k]++
		return &model.Response{
			Text:  fmt.Sprintf("%s call %d", k, n[k]),
			Calls: []model.ToolCall{{ID: fmt.Sprintf("c%d", n[k]), Name: "read_skill", Args: json.RawMessage(`{"id":"x"}`)}},
			Usage: model.Usage{InputTokens: 10, OutputTokens: n[k]},
		}, nil
	})
}

func request(agent, task string, step int) *model.Request {
	msgs := []model.Message{{Role: model.User, Text: "Goal for " + task}}
	for i := range step {
		msgs = append(msgs,
			model.Message{Role: model.Assistant, Calls: []model.ToolCall{{ID: fmt.Sprintf("c%d", i+1), Name: "read_skill", Args: json.RawMessage(`{"id":"x"}`)}}},
			model.Message{Role: model.Tool, CallID: fmt.Sprintf("c%d", i+1), Name: "read_skill", Text: "loaded"})
	}
	return &model.Request{
		Context:  "System prompt.\nCatalog:\n- weekly-report 1.0.0",
		Messages: msgs,
		Tools: []model.ToolDef{
			{Name: "read_skill", Description: "Load a skill.", Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)},
			{Name: "runBoard", Description: "Run the board."},
		},
		Caller: model.Caller{Agent: agent, TaskID: task, TaskGoal: "goal " + task, Step: step},
	}
}

var callers = [][2]string{{"", ""}, {"extractor", "gather"}, {"summarizer", "brief"}, {"", "t3"}}

// record runs every caller for 3 steps concurrently through a Recorder.
func record(t *testing.T, opts ...Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	rec := NewRecorder(echo(), &buf, opts...)
	var wg sync.WaitGroup
	for _, c := range callers {
		wg.Go(func() {
			for step := range 3 {
				if _, err := rec.Generate(context.Background(), request(c[0], c[1], step)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	return buf.Bytes()
}

func TestReplayIsDeterministicUnderAnyInterleaving(t *testing.T) {
	data := record(t)
	want := map[string]*model.Response{}
	inner := echo()
	for _, c := range callers {
		for step := range 3 {
			resp, _ := inner.Generate(context.Background(), request(c[0], c[1], step))
			want[fmt.Sprint(c, step)] = resp
		}
	}
	for round := range 5 {
		rp, err := NewReplayer(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		got := map[string]*model.Response{}
		var wg sync.WaitGroup
		// Callers start in a different order each round.
		for i := range callers {
			c := callers[(i+round)%len(callers)]
			wg.Go(func() {
				for step := range 3 {
					resp, err := rp.Generate(context.Background(), request(c[0], c[1], step))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					got[fmt.Sprint(c, step)] = resp
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d (-want +got):\n%s", round, diff)
		}
		if u := rp.Unused(); len(u) != 0 {
			t.Errorf("unused: %v", u)
		}
	}
}

func TestDivergence(t *testing.T) {
	data := record(t)
	tests := []struct {
		name   string
		caller [2]string
		steps  int // calls made before the changed one, unchanged
		change func(r *model.Request)
		want   string
	}{
		{name: "message text", caller: callers[1], steps: 2, change: func(r *model.Request) { r.Messages[2].Text = "not loaded" },
			want: `replay: agent "extractor", task "gather", step 2: replay diverged from the cassette: message 3 (tool) text differs: recorded "loaded" (6 bytes), now "not loaded" (10 bytes)`},
		{name: "missing tool", caller: callers[0], steps: 0, change: func(r *model.Request) { r.Tools = r.Tools[1:] },
			want: `replay: host, step 0: replay diverged from the cassette: tools differ: missing read_skill`},
		{name: "changed schema", caller: callers[0], steps: 1, change: func(r *model.Request) { r.Tools[0].Parameters = json.RawMessage(`{"type":"object"}`) },
			want: `tools differ: changed description or schema: read_skill`},
		{name: "context line", caller: callers[2], steps: 1, change: func(r *model.Request) { r.Context = strings.Replace(r.Context, "1.0.0", "1.1.0", 1) },
			want: `replay: agent "summarizer", task "brief", step 1: replay diverged from the cassette: context differs at line 3: now "- weekly-report 1.1.0"`},
		{name: "extra message", caller: callers[3], steps: 1, change: func(r *model.Request) {
			r.Messages = append(r.Messages, model.Message{Role: model.User, Text: "And more."})
		}, want: `replay: default worker, task "t3", step 1: replay diverged from the cassette: message count differs: recorded 3, now 4; first new: message 4 (user) "And more."`},
		{name: "tool call args", caller: callers[0], steps: 2, change: func(r *model.Request) { r.Messages[1].Calls[0].Args = json.RawMessage(`{"id":"y"}`) },
			want: `message 2 (assistant) tool call 1 (read_skill) arguments differ`},
		{name: "two differences", caller: callers[0], steps: 1, change: func(r *model.Request) { r.Messages[0].Text = "Other"; r.Tools = nil },
			want: `message 1 (user) text differs: recorded "Goal for" (9 bytes), now "Other" (5 bytes) (also differ: tools)`},
		{name: "unknown caller", caller: [2]string{"ghost", "t9"}, change: func(*model.Request) {},
			want: `replay: agent "ghost", task "t9", step 0: replay diverged from the cassette: the cassette has no calls by this caller`},
		{name: "one call too many", caller: callers[1], steps: 3, change: func(*model.Request) {},
			want: `replay: agent "extractor", task "gather", step 3: replay diverged from the cassette: the cassette has only 3 calls by this caller`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rp, err := NewReplayer(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			for step := range tt.steps {
				if _, err := rp.Generate(context.Background(), request(tt.caller[0], tt.caller[1], step)); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			req := request(tt.caller[0], tt.caller[1], min(tt.steps, 2))
			tt.change(req)
			_, err = rp.Generate(context.Background(), req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, tt.want)
			}
			if !errors.Is(err, ErrDiverged) {
				t.Errorf("err does not wrap ErrDiverged")
			}
		})
	}
}

func TestFormattingIsNotADifference(t *testing.T) {
	data := record(t)
	rp, _ := NewReplayer(bytes.NewReader(data))
	req := request("", "", 0)
	req.Tools[0].Parameters = json.RawMessage("{\n  \"properties\": {\"id\": {\"type\": \"string\"}},\n  \"type\": \"object\"\n}")
	if _, err := rp.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

func TestSecretsNeverWritten(t *testing.T) {
	var buf bytes.Buffer
	leaky := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step == 1 {
			return nil, errors.New("upstream said: bad key " + secret)
		}
		return &model.Response{Text: "your key is " + secret, Calls: []model.ToolCall{{ID: "c", Name: "x", Args: json.RawMessage(`{"k":"` + secret + `"}`)}}}, nil
	})
	rec := NewRecorder(leaky, &buf, WithSecrets(redact.FromEnv([]string{"OPENAI_API_KEY=" + secret, "HOME=/root"})...), WithMeta("model", "openai/x?key="+secret))
	req := request("", "", 0)
	req.Context += "\nkey " + secret
	req.Messages[0].Text = "use " + secret
	if _, err := rec.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req.Caller.Step = 1
	if _, err := rec.Generate(context.Background(), req); err == nil {
		t.Fatal("want the inner error")
	}
	if bytes.Contains(buf.Bytes(), []byte(secret)) {
		t.Fatalf("cassette contains the secret:\n%s", buf.String())
	}
	if !bytes.Contains(buf.Bytes(), []byte("[REDACTED]")) {
		t.Fatalf("nothing was masked:\n%s", buf.String())
	}
	// The replayer, told the same secret, matches the request.
	rp, err := NewReplayer(&buf, WithSecrets(secret))
	if err != nil {
		t.Fatal(err)
	}
	req.Caller.Step = 0
	resp, err := rp.Generate(context.Background(), req)
	if err != nil || resp.Text != "your key is [REDACTED]" {
		t.Fatalf("replay = %+v, %v", resp, err)
	}
	_, err = rp.Generate(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "upstream said: bad key [REDACTED] (replayed") {
		t.Fatalf("replayed error = %v", err)
	}
}

func TestReplayStreams(t *testing.T) {
	rp, _ := NewReplayer(bytes.NewReader(record(t)))
	var deltas []string
	req := request("", "", 0)
	req.OnText = func(d string) { deltas = append(deltas, d) }
	if _, err := rp.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/ call 1"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
}

func TestBadCassettes(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"not json", "{\"fsd_recording\":1}\nnope\n", "cassette line 2: not a JSON object"},
		{"newer version", `{"fsd_recording":9}`, "format version 9 is newer"},
		{"no digest", `{"seq":0,"response":{"text":"x"}}`, "cassette line 1: exchange without digest or response"},
		{"gap", `{"seq":1,"digest":"d","response":{"text":"x"}}`, "host has no exchange 0 (found 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReplayer(strings.NewReader(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestCancelledCallsAreNotRecorded(t *testing.T) {
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := NewRecorder(model.Func(func(ctx context.Context, _ *model.Request) (*model.Response, error) { return nil, ctx.Err() }), &buf)
	if _, err := rec.Generate(ctx, request("", "", 0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("%d lines, want only the header:\n%s", n, buf.String())
	}
}

// A response's provider state (a model's encrypted reasoning) is recorded
// and replayed with it: a replayed run's next request sends it as the
// recorded run's did.
func TestStateRecordedAndReplayed(t *testing.T) {
	state := &model.State{Model: "openai-responses/m", Data: json.RawMessage(`[{"type":"reasoning","id":"rs_1","encrypted_content":"gAAA"}]`)}
	inner := model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Text: "ok", State: state}, nil
	})
	var buf bytes.Buffer
	if _, err := NewRecorder(inner, &buf).Generate(context.Background(), request("", "", 0)); err != nil {
		t.Fatal(err)
	}
	rp, err := NewReplayer(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rp.Generate(context.Background(), request("", "", 0))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(state, got.State); diff != "" {
		t.Errorf("replayed state (-want +got):\n%s", diff)
	}
}
