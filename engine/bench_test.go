package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// benchHost builds a host with three loaded skills and a transcript of n
// messages (turns of a user message, a call and its result, an answer).
func benchHost(b *testing.B, n int) *generator {
	b.Helper()
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelInline), skill("cc", "1.0.0", spec.ChannelHandle))
	r, err := New(p, Options{Model: model.Func(func(context.Context, *model.Request) (*model.Response, error) { return nil, nil })})
	if err != nil {
		b.Fatal(err)
	}
	g, h, err := r.newHost("bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{"aa", "bb", "cc"} {
		if h.mgr.read(context.Background(), id, h.tr).IsError {
			b.Fatal("read failed")
		}
	}
	for i := 0; h.tr.Len() < n; i++ {
		id := fmt.Sprintf("c%d", i)
		for _, m := range []model.Message{
			{Role: model.User, Text: "question"},
			{Role: model.Assistant, Calls: []model.ToolCall{{ID: id, Name: "aa_echo", Args: []byte(`{"text":"x"}`)}}},
			{Role: model.Tool, CallID: id, Name: "aa_echo", Text: "aa says x", Artifact: ""},
			{Role: model.Assistant, Text: "answer"},
		} {
			if err := h.tr.AppendMessage(m); err != nil {
				b.Fatal(err)
			}
		}
	}
	return g
}

// BenchmarkRequestAssembly measures W4: assembling a request (context
// block, tool list, window of 60, reclaim) from transcripts of growing
// length. The cost must follow the window, not the transcript.
func BenchmarkRequestAssembly(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 1_000_000} {
		b.Run(fmt.Sprintf("transcript=%d", n), func(b *testing.B) {
			g := benchHost(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := g.request(i)
				if len(req.Messages) == 0 || len(req.Messages) > 60 {
					b.Fatalf("window of %d", len(req.Messages))
				}
			}
		})
	}
}

// BenchmarkWorkerToolRounds measures one worker doing 100 tool rounds on a
// zero-latency model: the generator's per-round overhead.
func BenchmarkWorkerToolRounds(b *testing.B) {
	s := team()
	p := project(s)
	rounds := 100
	p.Workflow.Limits.MaxSteps = rounds + 1
	p.Workflow.Limits.MaxTranscriptMessages = 60
	hostSteps := []step{read("team"), call("addTask", add("w", "iso")), call("runBoard", nil), say("done")}
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Agent == "" {
			return hostSteps[req.Caller.Step](req), nil
		}
		if req.Caller.Step < rounds {
			return call("team_echo", map[string]string{"text": "x"})(req), nil
		}
		return say("worker done")(req), nil
	})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := New(p, Options{Model: m})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Execute(context.Background(), ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*rounds), "µs/round")
}
