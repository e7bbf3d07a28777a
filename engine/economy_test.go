package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tokens"
)

// manual is a skill body of sections "## Procedure 1" … "## Procedure n",
// each of steps sentences of prose: bigManual (70 × 12) is about 25.6k
// tokens, smallManual (3 × 3) about 300.
func manual(n, steps int) string {
	var b strings.Builder
	b.WriteString("# Field manual\n\nHow to run the field station, one section per procedure.\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "\n## Procedure %d\n\n", i)
		for j := range steps {
			fmt.Fprintf(&b, "Step %d.%d: check gauge %d against the log, note the reading, and compare it with the previous shift's value before signing. ", i, j, i*j)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func bigManual() string   { return manual(70, 12) }
func smallManual() string { return manual(3, 3) }

// economyTask runs the realistic task over a skill with instructions body
// on channel ch: read the skill; as a handle, look up one section (inline
// has the body already); 8 more steps of work; answer. It returns the
// total input tokens: the BPE counts of every request, as request events
// report them (context block, window, tool definitions).
func economyTask(t *testing.T, body string, ch spec.Channel, lookup map[string]string) int {
	t.Helper()
	s := skill("manual", "1.0.0", ch)
	s.Instructions = body
	steps := []step{read("manual")}
	steps = append(steps, func(req *model.Request) *model.Response {
		if !strings.Contains(req.Context, `channel="handle"`) {
			return nil // inline: the body is in the request; no lookup
		}
		args := map[string]string{"handle": handleOf(t, req.Context, "manual")}
		for k, v := range lookup {
			args[k] = v
		}
		tool := "artifact_md"
		if args["get"] == "cat" {
			tool = "artifact_read"
		}
		return call(tool, args)(req)
	})
	for i := range 8 {
		steps = append(steps, call("manual_echo", map[string]string{"text": fmt.Sprintf("work item %d done", i)}))
	}
	steps = append(steps, say("Procedure 3 is done."))
	_, _, evs, err := runWith(t, project(s), Options{}, skipNil(steps)...)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, e := range evs {
		if e.Type == event.Request && e.Tokens != nil {
			total += e.Tokens.Total
		}
	}
	return total
}

// skipNil lets a step decline: a step that returns nil hands the request
// to the next step, so the inline run makes no lookup call. The test model
// takes one step per request; each of these takes the next that answers.
func skipNil(steps []step) []step {
	i := 0
	next := func(req *model.Request) *model.Response {
		for i < len(steps) {
			r := steps[i](req)
			i++
			if r != nil {
				return r
			}
		}
		return &model.Response{Text: "out of steps"}
	}
	out := make([]step, len(steps))
	for k := range out {
		out[k] = next
	}
	return out
}

// The token economy's measurement: the realistic task over a
// 25k-token skill and over a 300-token one, for each channel; total input
// tokens for handle, inline, auto and the default (no channel set, which
// is auto), and each as a share of inline. Targets: handle at most 12 % of
// inline for the large skill; for the small one, the default at most
// inline + 10 % (auto picks inline: an explicit handle pays the reader
// definitions and a lookup, more than the body costs). Auto and the
// default cost what the channel they pick costs. Run with -v for the
// figures:
//
//	go test ./engine -run TestHandleVsInlineInputTokens -v
func TestHandleVsInlineInputTokens(t *testing.T) {
	testpar.UnlessRace(t)
	section := map[string]string{"get": "section", "heading": "Procedure 3"}
	for _, sk := range []struct {
		name string
		body string
		// the default channel's cost at most this share of inline's
		target float64
	}{{"large", bigManual(), 0.12}, {"small", smallManual(), 1.10}} {
		h := economyTask(t, sk.body, spec.ChannelHandle, section)
		in := economyTask(t, sk.body, spec.ChannelInline, nil)
		auto := economyTask(t, sk.body, spec.ChannelAuto, section)
		def := economyTask(t, sk.body, "", section)
		n := tokens.Count(sk.body)
		pct := func(x int) float64 { return 100 * float64(x) / float64(in) }
		t.Logf("%s skill (%d tokens): input tokens handle %d (%.1f %% of inline), inline %d, auto %d (%.1f %%), default %d (%.1f %%)",
			sk.name, n, h, pct(h), in, auto, pct(auto), def, pct(def))
		if float64(def) > sk.target*float64(in) {
			t.Errorf("%s skill: the default channel costs %d input tokens, more than %.0f %% of inline's %d", sk.name, def, 100*sk.target, in)
		}
		// auto picks inline up to AutoInlineTokens and handle above.
		want := h
		if n <= spec.AutoInlineTokens {
			want = in
		}
		if auto != want || def != want {
			t.Errorf("%s skill: auto cost %d tokens and the default %d, want the cost of the channel auto should pick (%d)", sk.name, auto, def, want)
		}
	}
	// The floor of a handle over a small body: a model that reads all
	// of it instead of one section.
	whole := economyTask(t, smallManual(), spec.ChannelHandle, map[string]string{"get": "cat"})
	in := economyTask(t, smallManual(), spec.ChannelInline, nil)
	t.Logf("small skill read whole as a handle (artifact_read get=cat): %d input tokens, %.1f %% of inline", whole, 100*float64(whole)/float64(in))
}
