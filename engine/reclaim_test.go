package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// readSection asks for a section of a skill's artifact by the handle its
// receipt gave, found in the request's messages.
func readSection(id string) step {
	return func(req *model.Request) *model.Response {
		var handle string
		for _, m := range req.Messages {
			var rc struct{ ID, Handle string }
			if m.Role == model.Tool && json.Unmarshal([]byte(m.Text), &rc) == nil && rc.ID == id {
				handle = rc.Handle
			}
		}
		args, _ := json.Marshal(map[string]string{"get": "section", "handle": handle, "heading": "Steps"})
		return &model.Response{Calls: []model.ToolCall{{ID: "r-" + id, Name: "artifact_md", Args: args}}}
	}
}

// H1, H2, H4: a handle skill's request carries a pointer, not the body;
// reader results are reclaimed to a stub once the skill unloads while the
// transcript keeps them whole; other tool results are never touched; a
// reader call with an unloaded skill's handle is an error the model reads.
func TestHandleChannelAndReclaim(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxLoadedSkills = 1
	var handle string
	captureHandle := func(req *model.Request) *model.Response {
		var rc struct{ Handle string }
		_ = json.Unmarshal([]byte(lastResult(req).Text), &rc)
		handle = rc.Handle
		return readSection("aa")(req)
	}
	staleRead := func(*model.Request) *model.Response {
		args, _ := json.Marshal(map[string]string{"get": "headings", "handle": handle})
		return &model.Response{Calls: []model.ToolCall{{ID: "stale", Name: "artifact_md", Args: args}}}
	}
	res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir()},
		read("aa"), captureHandle,
		call("aa_echo", map[string]string{"text": "work"}),
		read("bb"), staleRead, say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	loaded := reqs[1]
	if strings.Contains(loaded.Context, "BODY-OF-aa") || !strings.Contains(loaded.Context, `handle="`+handle+`"`) {
		t.Errorf("H1: want a pointer with the handle and no body:\n%s", loaded.Context)
	}
	if len(handle) < 2+32 {
		t.Errorf("H1: handle %q is shorter than 128 bits of hex", handle)
	}
	if r := lastResult(reqs[2]); !strings.Contains(r.Text, "Do the aa steps.") || r.Artifact != "aa" {
		t.Fatalf("reader result = %+v", r)
	}
	afterUnload := reqs[4]
	for _, msg := range afterUnload.Messages {
		switch {
		case msg.CallID == "r-aa" && msg.Role == model.Tool:
			if strings.Contains(msg.Text, "Do the aa steps.") || !strings.Contains(msg.Text, `"aa"`) {
				t.Errorf("H4: reader result not reclaimed to a stub naming the skill: %q", msg.Text)
			}
			if strings.Count(msg.Text, "\n") > 0 {
				t.Errorf("H4: stub is more than one line: %q", msg.Text)
			}
		case msg.Role == model.Tool && msg.Name == "aa_echo":
			if msg.Text != "aa says work" {
				t.Errorf("H4: work was reclaimed: %q", msg.Text)
			}
		}
	}
	if r := lastResult(reqs[5]); !r.IsError || !strings.Contains(r.Text, "loaded") {
		t.Errorf("H2: a stale handle answered %+v", r)
	}
	// The transcript on disk keeps the reader result whole.
	whole := false
	for _, e := range readTranscript(t, res.Dir, "transcript.jsonl") {
		if e.Message != nil && e.Message.CallID == "r-aa" && strings.Contains(e.Message.Text, "Do the aa steps.") {
			whole = true
		}
	}
	if !whole {
		t.Error("H4: the transcript lost the reader result")
	}
}

// H4 with inline: unload takes the inline body out of the next request.
func TestInlineReclaimedOnUnload(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelInline), skill("bb", "1.0.0", spec.ChannelInline))
	p.Workflow.Limits.MaxLoadedSkills = 1
	_, m, _, err := runWith(t, p, Options{}, read("aa"), read("bb"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	last := m.requests()[2]
	if strings.Contains(last.Context, "BODY-OF-aa") || !strings.Contains(last.Context, "BODY-OF-bb") {
		t.Errorf("inline bodies after eviction:\n%s", last.Context)
	}
}

// The workflow's channel sets the default, else auto; a skill's own
// channel wins. Auto is inline for a short body without resource files and
// handle for a long body or one with resources (they are read by path
// under the handle).
func TestChannelDefaults(t *testing.T) {
	testpar.UnlessRace(t)
	long := strings.Repeat("Check the gauge against the log before signing. ", 200) // ~2,000 tokens
	// 3,000 bytes of CJK text are 1,856 tokens: fewer bytes than three
	// times the threshold, more tokens than it, so only a count sees it.
	var cjk strings.Builder
	for r := rune(0x4E00); cjk.Len() < 3000; r += 7 {
		cjk.WriteRune(r)
	}
	tests := []struct {
		name      string
		workflow  spec.Channel
		skill     spec.Channel
		body      string
		resources []string
		want      string
	}{
		{"workflow default", spec.ChannelInline, "", "", nil, "inline"},
		{"skill wins", spec.ChannelInline, spec.ChannelHandle, "", nil, "handle"},
		{"workflow handle", spec.ChannelHandle, "", "", nil, "handle"},
		{"auto by default: short body", "", "", "", nil, "inline"},
		{"auto by default: long body", "", "", long, nil, "handle"},
		{"auto by default: resources", "", "", "", []string{"references/api.md"}, "handle"},
		{"auto by default: 3,000 bytes of CJK", "", "", cjk.String(), nil, "handle"},
		{"skill auto over workflow inline: resources", spec.ChannelInline, spec.ChannelAuto, "", []string{"references/api.md"}, "handle"},
		{"skill auto over workflow handle", spec.ChannelHandle, spec.ChannelAuto, "", nil, "inline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := skill("aa", "1.0.0", tt.skill)
			if tt.body != "" {
				s.Instructions = tt.body
			}
			s.Resources = tt.resources
			p := project(s)
			p.Workflow.Channel = tt.workflow
			_, m, _, err := runWith(t, p, Options{}, read("aa"), say("done"))
			if err != nil {
				t.Fatal(err)
			}
			ctx := m.requests()[1].Context
			if !strings.Contains(ctx, `<skill id="aa" version="1.0.0" channel="`+tt.want+`"`) {
				t.Errorf("want channel %s:\n%s", tt.want, ctx)
			}
		})
	}
}

// H4 for a failed read: a reader error about a loaded skill's artifact (a
// missing heading answers with the heading list) is its instruction text
// too, and is stubbed like a successful read once the skill unloads.
func TestFailedReaderResultReclaimed(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxLoadedSkills = 1
	missing := func(req *model.Request) *model.Response {
		var rc struct{ Handle string }
		_ = json.Unmarshal([]byte(lastResult(req).Text), &rc)
		args, _ := json.Marshal(map[string]string{"get": "section", "handle": rc.Handle, "heading": "No such heading"})
		return &model.Response{Calls: []model.ToolCall{{ID: "miss", Name: "artifact_md", Args: args}}}
	}
	_, m, _, err := runWith(t, p, Options{}, read("aa"), missing, read("bb"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if r := lastResult(reqs[2]); !r.IsError || !strings.Contains(r.Text, "Steps") {
		t.Fatalf("a missing heading should answer an error listing the headings, got %+v", r)
	}
	for _, msg := range reqs[3].Messages {
		if msg.CallID == "miss" && (strings.Contains(msg.Text, "Steps") || !strings.Contains(msg.Text, "reclaimed")) {
			t.Errorf("H4: the failed read of an unloaded skill was not stubbed: %q", msg.Text)
		}
	}
}
