package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

const (
	chainOpenAI    = `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"from openai"},"finish_reason":"stop"}]}`
	chainAnthropic = `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"from anthropic"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`
	overloaded     = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
)

// chainOf builds the chain Anthropic then OpenAI against two servers, one
// retry each, waits skipped.
func chainOf(t *testing.T, ant, oai *fakeserver.Server) model.Model {
	t.Helper()
	env := envOf(map[string]string{"ANTHROPIC_API_KEY": "k-123456", "ANTHROPIC_BASE_URL": ant.URL,
		"OPENAI_API_KEY": "k-123456", "OPENAI_BASE_URL": oai.URL + "/v1"})
	m, err := New("anthropic/claude-x,openai/gpt-x", env, Options{MaxRetries: 1,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ask(m model.Model, answered string) (*model.Response, error) {
	return m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}},
		Caller: model.Caller{Model: "anthropic/claude-x,openai/gpt-x", Answered: answered}})
}

func TestChain(t *testing.T) {
	t.Run("the first model answers", func(t *testing.T) {
		ant, oai := fakeserver.New(fakeserver.Reply{Body: chainAnthropic}), fakeserver.New()
		defer ant.Close()
		defer oai.Close()
		resp, err := ask(chainOf(t, ant, oai), "")
		if err != nil || resp.Text != "from anthropic" || resp.Model != "anthropic/claude-x" || len(oai.Requests()) != 0 {
			t.Fatalf("resp %+v, err %v, %d openai requests", resp, err, len(oai.Requests()))
		}
	})
	t.Run("an overload fails over once retries are spent", func(t *testing.T) {
		ant := fakeserver.New(fakeserver.Reply{Status: 529, Body: overloaded}, fakeserver.Reply{Status: 529, Body: overloaded})
		oai := fakeserver.New(fakeserver.Reply{Body: chainOpenAI})
		defer ant.Close()
		defer oai.Close()
		resp, err := ask(chainOf(t, ant, oai), "")
		if err != nil || resp.Text != "from openai" || resp.Model != "openai/gpt-x" {
			t.Fatalf("resp %+v, err %v", resp, err)
		}
		if n := len(ant.Requests()); n != 2 {
			t.Errorf("anthropic got %d requests, want 2 (one retry)", n)
		}
	})
	t.Run("a bad request does not fail over", func(t *testing.T) {
		ant := fakeserver.New(fakeserver.Reply{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`})
		oai := fakeserver.New(fakeserver.Reply{Body: chainOpenAI})
		defer ant.Close()
		defer oai.Close()
		if _, err := ask(chainOf(t, ant, oai), ""); err == nil || !strings.Contains(err.Error(), "HTTP 400") || len(oai.Requests()) != 0 {
			t.Fatalf("err %v, %d openai requests", err, len(oai.Requests()))
		}
	})
	t.Run("every model down says so of each", func(t *testing.T) {
		ant := fakeserver.New(fakeserver.Reply{Status: 529, Body: overloaded}, fakeserver.Reply{Status: 529, Body: overloaded})
		oai := fakeserver.New(fakeserver.Reply{Status: 503, Body: `{"error":{"message":"down"}}`}, fakeserver.Reply{Status: 503, Body: `{"error":{"message":"down"}}`})
		defer ant.Close()
		defer oai.Close()
		_, err := ask(chainOf(t, ant, oai), "")
		if err == nil || !strings.Contains(err.Error(), "openai: HTTP 503") || !strings.Contains(err.Error(), "after anthropic/claude-x failed: anthropic: HTTP 529") || !strings.HasPrefix(err.Error(), "openai/gpt-x failed: ") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a generator stays on the model that answered", func(t *testing.T) {
		ant, oai := fakeserver.New(fakeserver.Reply{Body: chainAnthropic}), fakeserver.New(fakeserver.Reply{Body: chainOpenAI})
		defer ant.Close()
		defer oai.Close()
		resp, err := ask(chainOf(t, ant, oai), "openai/gpt-x")
		if err != nil || resp.Model != "openai/gpt-x" || len(ant.Requests()) != 0 {
			t.Fatalf("resp %+v, err %v, %d anthropic requests", resp, err, len(ant.Requests()))
		}
	})
	t.Run("text streamed by a model that then failed is reset", func(t *testing.T) {
		cut := fakeserver.Reply{Header: map[string]string{"Content-Type": "text/event-stream"}, Body: "event: message_start\n" +
			`data: {"type":"message_start","message":{"id":"m","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n" +
			"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
			"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Half"}}` + "\n\n"}
		ant := fakeserver.New(cut, cut)
		oai := fakeserver.New(fakeserver.Reply{Body: chainOpenAI})
		defer ant.Close()
		defer oai.Close()
		var got []string
		req := &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}},
			OnText:  func(d string) { got = append(got, d) },
			OnReset: func() { got = append(got, "<reset>") }}
		resp, err := chainOf(t, ant, oai).Generate(context.Background(), req)
		if err != nil || resp.Model != "openai/gpt-x" {
			t.Fatalf("resp %+v, err %v", resp, err)
		}
		if want := "Half <reset> Half <reset> from openai"; strings.Join(got, " ") != want {
			t.Errorf("deltas %q, want %q", strings.Join(got, " "), want)
		}
	})
}

func TestParseChain(t *testing.T) {
	for _, tt := range []struct{ in, wantErr string }{
		{"anthropic/claude-x,openai/gpt-x", ""},
		{"anthropic/claude-x,scripted", "scripted cannot be part of a fallback chain"},
		{"openai/gpt-x,openai/gpt-x", "openai/gpt-x is named twice"},
		{"openai/gpt-x,antropic/claude", `unknown provider "antropic"`},
	} {
		_, err := ParseChain(tt.in)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: err = %v, want %q", tt.in, err, tt.wantErr)
		}
		if cerr := Check(tt.in, envOf(map[string]string{"OPENAI_API_KEY": "k-123456", "ANTHROPIC_API_KEY": "k-123456"})); (cerr == nil) != (err == nil) {
			t.Errorf("%s: Check = %v, ParseChain = %v", tt.in, cerr, err)
		}
	}
	// A chain's missing key is found before any request.
	if err := Check("anthropic/claude-x,openai/gpt-x", envOf(map[string]string{"ANTHROPIC_API_KEY": "k-123456"})); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY is not set") {
		t.Errorf("err = %v", err)
	}
}
