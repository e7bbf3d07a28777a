package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tokens"
)

// bigBody is a realistic markdown body of at least n tokens.
func bigBody(id string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nHow to run the %s process, step by step.\n\n", id, id)
	for i := 1; tokens.Count(b.String()) < n; i++ {
		fmt.Fprintf(&b, "## Step %d\n\nCheck the inputs for stage %d, then run the %s tool with the week number and "+
			"compare the totals against the previous report. If a figure moved by more than ten percent, "+
			"write it down with its cause before going on.\n\n```sh\nfsd run %s-%d.workflow.yaml\n```\n\n", i, i, id, id, i)
	}
	return b.String()
}

// The handle channel's saving: three loaded skills whose bodies
// are each at least 4,000 tokens cost, in the current-context block of
// every request, at most 3 % of what they cost inline.
func TestHandleSavingOverInline(t *testing.T) {
	testpar.UnlessRace(t)
	measure := func(ch spec.Channel) (ctxTokens, bodyTokens int) {
		var skills []*spec.Skill
		for _, id := range []string{"billing", "payroll", "audits"} {
			s := skill(id, "1.0.0", ch)
			s.Instructions = bigBody(id, 4000)
			bodyTokens += tokens.Count(s.Instructions)
			skills = append(skills, s)
		}
		p := project(skills...)
		_, m, _, err := runWith(t, p, Options{}, read("billing"), read("payroll"), read("audits"), say("done"))
		if err != nil {
			t.Fatal(err)
		}
		reqs := m.requests()
		// The context block with nothing loaded is the baseline both share.
		return tokens.Count(reqs[3].Context) - tokens.Count(reqs[0].Context), bodyTokens
	}
	handle, bodies := measure(spec.ChannelHandle)
	inline, _ := measure(spec.ChannelInline)
	ratio := float64(handle) / float64(inline)
	t.Logf("three loaded skills, %d body tokens: handle adds %d tokens per request, inline %d (%.2f%%)", bodies, handle, inline, 100*ratio)
	if bodies < 12000 {
		t.Fatalf("bodies are %d tokens, want at least 3 × 4,000", bodies)
	}
	if ratio > 0.03 {
		t.Errorf("handle costs %.2f%% of inline, want at most 3%%", 100*ratio)
	}
}

// A script's {{handle "id"}} of a skill loaded inline is an error that
// says why and what to set: readers are not offered for an inline skill,
// so a handle would only lead to "Unknown tool".
func TestHandleOfInlineSkill(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tt := range []struct {
		name     string
		skill    spec.Channel
		workflow spec.Channel
		want     string // "" = a handle
	}{
		{"default auto, short body", "", "", `skill "aa" has no handle: channel auto puts instructions of at most 1000 tokens inline; set channel: handle in the skill to read it through a handle`},
		{"inline", spec.ChannelInline, "", `skill "aa" has no handle: its channel is inline; set channel: handle in the skill to read it through a handle`},
		{"workflow inline", "", spec.ChannelInline, `skill "aa" has no handle: its channel is inline; set channel: handle in the skill to read it through a handle`},
		{"handle", spec.ChannelHandle, "", ""},
		{"workflow handle", "", spec.ChannelHandle, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := project(skill("aa", "1.0.0", tt.skill))
			p.Workflow.Channel = tt.workflow
			r, err := New(p, Options{Model: &recModel{}})
			if err != nil {
				t.Fatal(err)
			}
			h, err := r.Handle("aa")
			switch {
			case tt.want == "" && (err != nil || !strings.HasPrefix(h, "h_")):
				t.Errorf("Handle = %q, %v; want a handle", h, err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("Handle error = %v\nwant %s", err, tt.want)
			}
		})
	}
}
