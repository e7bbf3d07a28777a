package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tokens"
)

// bigManual is a skill body of about 25.6k tokens: 70 sections of prose.
func bigManual() string {
	var b strings.Builder
	b.WriteString("# Field manual\n\nHow to run the field station, one section per procedure.\n")
	for i := 1; i <= 70; i++ {
		fmt.Fprintf(&b, "\n## Procedure %d\n\n", i)
		for j := 0; j < 12; j++ {
			fmt.Fprintf(&b, "Step %d.%d: check gauge %d against the log, note the reading, and compare it with the previous shift's value before signing. ", i, j, i*j)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The realistic task over a large skill: read it, look up one section
// (handle only: inline has the body already), 8 more steps of work,
// answer. Total input tokens (BPE counts of every request) for each
// channel, for a ~27k-token skill and a ~300-token one.
func TestHandleVsInlineInputTokens(t *testing.T) {
	small := strings.Repeat("Greet the person by name and keep it short. ", 30)
	for _, sk := range []struct {
		name, body string
	}{{"large", bigManual()}, {"small", small}} {
		totals := map[spec.Channel]int{}
		for _, ch := range []spec.Channel{spec.ChannelHandle, spec.ChannelInline, spec.ChannelAuto} {
			s := skill("manual", "1.0.0", ch)
			s.Instructions = sk.body
			steps := []step{read("manual")}
			if ch == spec.ChannelHandle || ch == spec.ChannelAuto && sk.name == "large" {
				steps = append(steps, func(req *model.Request) *model.Response {
					h := handleOf(t, req.Context, "manual")
					return call("artifact_md_sections", map[string]string{"handle": h, "heading": "Procedure 17"})(req)
				})
			}
			for i := range 8 {
				steps = append(steps, call("manual_echo", map[string]string{"text": fmt.Sprintf("work item %d done", i)}))
			}
			steps = append(steps, say("Procedure 17 is done."))
			_, _, evs, err := runWith(t, project(s), Options{}, steps...)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Type == event.Request && e.Tokens != nil {
					totals[ch] += e.Tokens.Total
				}
			}
		}
		h, in, auto := totals[spec.ChannelHandle], totals[spec.ChannelInline], totals[spec.ChannelAuto]
		t.Logf("%s skill (%d tokens): handle %d, inline %d, auto %d input tokens: handle is %.1f %% of inline, auto %.1f %%",
			sk.name, tokens.Count(sk.body), h, in, auto, 100*float64(h)/float64(in), 100*float64(auto)/float64(in))
		// auto picks inline under AutoInlineTokens and handle above.
		want := h
		if tokens.Count(sk.body) <= spec.AutoInlineTokens {
			want = in
		}
		if auto != want {
			t.Errorf("%s skill: auto cost %d tokens, want the cost of the channel it should pick (%d)", sk.name, auto, want)
		}
	}
}
