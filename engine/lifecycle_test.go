package engine

import (
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// L1: at most max-loaded-skills are loaded; one more evicts the least
// recently read; re-reading a loaded skill makes it active and loads nothing.
func TestL1LRUEviction(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle), skill("cc", "1.0.0", spec.ChannelHandle), skill("dd", "1.0.0", spec.ChannelHandle))
	_, m, events, err := runWith(t, p, Options{},
		read("aa"), read("bb"), read("cc"),
		read("aa"), // aa is now the most recent: bb is the least recent
		read("dd"), // evicts bb
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	last := reqs[len(reqs)-1]
	for id, want := range map[string]bool{"aa": true, "bb": false, "cc": true, "dd": true} {
		if got := has(toolNames(last), id+"_echo"); got != want {
			t.Errorf("after the fourth read, %s loaded = %v, want %v", id, got, want)
		}
		if got := strings.Contains(last.Context, `id="`+id+`"`); got != want {
			t.Errorf("after the fourth read, %s in context = %v, want %v", id, got, want)
		}
	}
	var loads, unloads []string
	for _, e := range events {
		switch e.Type {
		case event.SkillLoaded:
			loads = append(loads, e.Skill)
		case event.SkillUnloaded:
			unloads = append(unloads, e.Skill+":"+e.Reason)
		}
	}
	if got := strings.Join(loads, ","); got != "aa,bb,cc,dd" {
		t.Errorf("loads = %s, want aa,bb,cc,dd (the re-read loads nothing)", got)
	}
	if got := strings.Join(unloads, ","); got != "bb:evicted" {
		t.Errorf("unloads = %s, want bb:evicted", got)
	}
	// The re-read answered a receipt saying it is active.
	if r := lastResult(reqs[4]); !strings.Contains(r.Text, `"active":true`) || r.IsError {
		t.Errorf("re-read receipt = %s", r.Text)
	}
	if !strings.Contains(last.Context, `id="dd" version="1.0.0" channel="handle"`) {
		t.Errorf("dd should be loaded:\n%s", last.Context)
	}
	// The re-read made aa active, which the request after it says; dd,
	// read last, is the one loaded last, which goes without saying.
	if m := reqs[4].Messages[len(reqs[4].Messages)-1]; !m.Volatile || m.Text != `<active_skill id="aa" version="1.0.0"/>` {
		t.Errorf("aa should be active after its re-read: the request's last message is %+v", m)
	}
	if m := last.Messages[len(last.Messages)-1]; m.Volatile {
		t.Errorf("dd, loaded last, is active: the request says %q", m.Text)
	}
}

// L2: every loaded skill's tools are in the request and work, not only the
// active one's.
func TestL2AllLoadedToolsWork(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	_, m, _, err := runWith(t, p, Options{},
		read("aa"), read("bb"),
		call("aa_echo", map[string]string{"text": "hi"}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if names := toolNames(reqs[2]); !has(names, "aa_echo") || !has(names, "bb_echo") {
		t.Errorf("tools = %v, want both skills' tools", names)
	}
	if r := lastResult(reqs[3]); r.IsError || r.Text != "aa says hi" {
		t.Errorf("aa_echo while bb is active = %+v", r)
	}
}

// L3: on unload a skill's tools leave the next request, and a call of a
// tool not in the request is answered "Unknown tool: NAME" as an error the
// model reads; the loop goes on.
func TestL3UnknownTool(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxLoadedSkills = 1
	res, m, _, err := runWith(t, p, Options{},
		read("aa"), read("bb"),
		call("aa_echo", map[string]string{"text": "hi"}),
		call("never_heard_of", nil),
		say("recovered"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if has(toolNames(reqs[2]), "aa_echo") {
		t.Errorf("aa_echo still offered after aa was evicted: %v", toolNames(reqs[2]))
	}
	for i, name := range map[int]string{3: "aa_echo", 4: "never_heard_of"} {
		r := lastResult(reqs[i])
		if !r.IsError || r.Text != "Unknown tool: "+name {
			t.Errorf("call of %s answered %+v", name, r)
		}
	}
	if res.Answer != "recovered" {
		t.Errorf("answer = %q; the loop should go on after Unknown tool", res.Answer)
	}
}

// L3 at dispatch: a read that evicts a skill makes that skill's tool
// unknown for a later call in the same response.
func TestL3EvictedWithinOneResponse(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxLoadedSkills = 1
	_, m, _, err := runWith(t, p, Options{},
		read("aa"),
		calls("read_skill", map[string]string{"id": "bb"}, "aa_echo", map[string]string{"text": "x"}),
		say("ok"))
	if err != nil {
		t.Fatal(err)
	}
	if r := lastResult(m.requests()[2]); !r.IsError || r.Text != "Unknown tool: aa_echo" {
		t.Errorf("got %+v", r)
	}
}

// L4: per-load state is discarded on unload; the store survives.
func TestL4StateAndStore(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxLoadedSkills = 1
	_, m, _, err := runWith(t, p, Options{},
		read("aa"),
		call("aa_setstate", map[string]string{"key": "k", "value": "in-state"}),
		call("aa_setstore", map[string]string{"key": "k", "value": "in-store"}),
		read("bb"), read("aa"),
		call("aa_state", map[string]string{"key": "k"}),
		call("aa_store", map[string]string{"key": "k"}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if r := lastResult(reqs[6]); strings.Contains(r.Text, "in-state") {
		t.Errorf("state survived the unload: %s", r.Text)
	}
	if r := lastResult(reqs[7]); !strings.Contains(r.Text, "in-store") {
		t.Errorf("store lost on unload: %s", r.Text)
	}
}

// L5: unloading deletes no work; every load and unload is a contextChanged
// entry with its reason.
func TestL5TranscriptKeepsWork(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxLoadedSkills = 1
	dir := t.TempDir()
	res, _, _, err := runWith(t, p, Options{RunsDir: dir},
		read("aa"), call("aa_echo", map[string]string{"text": "work"}), read("bb"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	entries := readTranscript(t, res.Dir, "transcript.jsonl")
	var sawWork bool
	var changes []string
	for _, e := range entries {
		if e.Message != nil && e.Message.Role == model.Tool && e.Message.Text == "aa says work" {
			sawWork = true
		}
		if e.Context != nil {
			changes = append(changes, strings.Join(e.Context.Loaded, "+")+"/"+strings.Join(e.Context.Unloaded, "+")+"/"+string(e.Context.Reason))
		}
	}
	if !sawWork {
		t.Error("the evicted skill's tool result is gone from the transcript")
	}
	if got, want := strings.Join(changes, " "), "aa//read bb/aa/read"; got != want {
		t.Errorf("contextChanged entries = %q, want %q", got, want)
	}
}

// H3 and C1: an inline body is in the context block while loaded (in an
// envelope naming skill, version and trust), never in the transcript; the
// catalog never holds instructions.
func TestInlineEnvelopeAndCatalog(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelInline), skill("bb", "2.0.0", spec.ChannelHandle))
	_, m, _, err := runWith(t, p, Options{}, read("aa"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	first, second := reqs[0], reqs[1]
	for _, id := range []string{"aa", "bb"} {
		if strings.Contains(first.Context, "BODY-OF-"+id) {
			t.Errorf("C1: catalog carries %s's instructions", id)
		}
		if !strings.Contains(first.Context, "id: "+id) {
			t.Errorf("C1: catalog lacks %s", id)
		}
	}
	if !strings.Contains(second.Context, `<skill id="aa" version="1.0.0" channel="inline" trust="trusted"`) ||
		!strings.Contains(second.Context, "BODY-OF-aa") {
		t.Errorf("H3: inline body missing from the envelope:\n%s", second.Context)
	}
	for _, msg := range second.Messages {
		if msg.Role == model.Context {
			continue // the load's line previews the first 200 characters
		}
		if strings.Contains(msg.Text, "BODY-OF-aa") {
			t.Errorf("H3: inline body leaked into the transcript: %+v", msg)
		}
	}
}
