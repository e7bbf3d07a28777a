package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// Every request of a run, as the record rebuilds it for fsd show: no
// window carries a handle skill's body (it reaches the model only through
// a reader call), and once a skill is disabled or changes version no
// request carries its old text, in the window or the context block.
func TestPreviewNoHiddenOrStaleText(t *testing.T) {
	testpar.UnlessRace(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.workflow.yaml")
	if err := os.WriteFile(wf, []byte("name: t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	skills := func(changed bool) *spec.Project {
		ed := skill("ed", "1.0.0", spec.ChannelInline)
		if changed {
			ed = skill("ed", "1.1.0", spec.ChannelInline)
			ed.Instructions = "# ed\n\nNEW-OF-ed\n"
		}
		p := project(skill("hh", "1.0.0", spec.ChannelHandle), ed, skill("dd", "1.0.0", spec.ChannelInline))
		p.Workflow.File = wf
		if changed {
			p.Workflow.Enabled, p.Workflow.EnabledSet = []string{"hh", "ed"}, true
		}
		return p
	}
	reload := func() (*spec.Project, error) { return skills(true), nil }
	changedAt := -1
	touch := func(req *model.Request) *model.Response {
		changedAt = req.Caller.Step + 1
		future := time.Now().Add(time.Hour)
		_ = os.Chtimes(wf, future, future)
		return &model.Response{Calls: []model.ToolCall{{ID: "x", Name: "hh_echo", Args: json.RawMessage(`{"text":"t"}`)}}}
	}
	res, _, _, err := runWith(t, skills(false), Options{Reload: reload, RunsDir: dir},
		read("hh"), read("ed"), read("dd"), touch, say("done"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := runrecord.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	host := rec.Gen("transcript.jsonl")
	if host == nil || len(host.Steps) != 5 || changedAt != 4 {
		t.Fatalf("setup: host steps %v, change at step %d", host, changedAt)
	}
	sawQuote := false
	for i, st := range host.Steps {
		req := st.Request
		for _, m := range req.Messages {
			if strings.Contains(m.Text, "BODY-OF-hh") {
				t.Errorf("step %d: the handle skill's body is in the window: %q", i+1, m.Text)
			}
			sawQuote = sawQuote || strings.Contains(m.Text, `instructions: "# dd`)
			if i < changedAt {
				continue
			}
			for _, stale := range []string{"BODY-OF-ed", "BODY-OF-dd"} {
				if strings.Contains(m.Text, stale) {
					t.Errorf("step %d: %s is in the window after the change: %q", i+1, stale, m.Text)
				}
			}
		}
		if i >= changedAt && (strings.Contains(req.Context, "BODY-OF-ed") || strings.Contains(req.Context, "BODY-OF-dd")) {
			t.Errorf("step %d: old text in the context block", i+1)
		}
	}
	if !sawQuote {
		t.Error("setup: no request quoted the inline skill before it was disabled")
	}
}

// The quote follows the skill's preview, else the workflow's, else 200
// characters; 0 quotes nothing, and a handle skill is quoted by its
// pointer.
func TestPreviewLength(t *testing.T) {
	testpar.UnlessRace(t)
	n := func(v int) *int { return &v }
	long := longSkill("aa") // inline, 453 characters
	for _, tc := range []struct {
		name      string
		wf, sk    *int
		handle    bool
		want      string // the quote line, "" for none
		wantQuote bool
	}{
		{"default", nil, nil, false, "  instructions (first 200 of 453 characters): ", true},
		{"workflow", n(10), nil, false, `  instructions (first 10 of 453 characters): "# aa — gui"`, true},
		{"skill over workflow", n(10), n(4), false, `  instructions (first 4 of 453 characters): "# aa"`, true},
		{"none", n(10), n(0), false, "", false},
		{"workflow none", n(0), nil, false, "", false},
		{"handle", nil, nil, true, `  pointer: "<skill id=\"aa\" version=\"1.0.0\" channel=\"handle\" handle=\"h_1\" trust=\"trusted\"/>"`, true},
		{"handle cut", nil, n(9), true, `  pointer (first 9 of 78 characters): "<skill id"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := *long
			s.Preview = tc.sk
			l := &loadedSkill{skill: &s, channel: spec.ChannelInline}
			added := s.Instructions
			if tc.handle {
				l.channel, l.handle = spec.ChannelHandle, "h_1"
				added = pointer(l, "trusted")
			}
			line, quoted := loadLine(l, added, spec.PreviewOf(&s, tc.wf))
			if quoted != tc.wantQuote {
				t.Errorf("quoted = %v, want %v", quoted, tc.wantQuote)
			}
			_, quote, _ := strings.Cut(line, "\n")
			if !strings.HasPrefix(quote, tc.want) || (tc.want == "") != (quote == "") {
				t.Errorf("quote line %q, want %q", quote, tc.want)
			}
			if tc.handle && strings.Contains(line, "steps for aa") {
				t.Errorf("a handle's line quotes its body: %q", line)
			}
			if err := checkContextLine(line); err != nil {
				t.Error(err)
			}
		})
	}
}

// quoteKeeper is a keeper whose catalog holds the revisions listed.
type quoteKeeper map[string]string

func (k quoteKeeper) loaded(string) bool { return true }
func (k quoteKeeper) current(id, rev string) bool {
	r, ok := k[id]
	return ok && r == rev
}

// reclaim drops the quote of a line whose skill left the catalog or
// changed revision, keeps the line's header, and leaves other lines and
// the caller's window alone.
func TestReclaimDropsStaleQuotes(t *testing.T) {
	testpar.UnlessRace(t)
	evict := "[fsd context] unloaded skill zz 1.0.0 (evicted: …)\n"
	window := []model.Message{
		{Role: model.Context, Text: "[fsd context] loaded skill aa 1.0.0 (read; channel inline)\n  instructions: \"A\"", Quotes: "aa@1.0.0"},
		{Role: model.Context, Text: evict + "[fsd context] loaded skill bb 1.0.0 (read; channel inline)\n  instructions: \"B\"", Quotes: "bb@1.0.0"},
		{Role: model.Context, Text: "[fsd context] loaded skill cc 1.0.0 (read; channel inline)\n  instructions: \"C\"", Quotes: "cc@1.0.0"},
		{Role: model.Context, Text: "[fsd context] skill aa 1.0.0 is the active skill again (read again; nothing new loaded)"},
	}
	orig := append([]model.Message(nil), window...)
	got := reclaim(window, quoteKeeper{"aa": "1.0.0", "bb": "2.0.0"}, compactReaders) // bb changed, cc disabled
	want := []string{
		orig[0].Text,
		evict + "[fsd context] loaded skill bb 1.0.0 (read; channel inline)",
		"[fsd context] loaded skill cc 1.0.0 (read; channel inline)",
		orig[3].Text,
	}
	for i := range want {
		if got[i].Text != want[i] {
			t.Errorf("message %d: %q, want %q", i, got[i].Text, want[i])
		}
	}
	if got[1].Quotes != "" || got[0].Quotes == "" {
		t.Errorf("Quotes after reclaim: %q, %q", got[0].Quotes, got[1].Quotes)
	}
	for i := range orig {
		if window[i].Text != orig[i].Text || window[i].Quotes != orig[i].Quotes {
			t.Errorf("reclaim changed the caller's message %d", i)
		}
	}
}
