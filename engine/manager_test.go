package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// newTestManager builds a skill manager from its collaborators alone: no
// run, no generator, no model.
func newTestManager(max int, skills ...*spec.Skill) (*manager, *event.Recorder) {
	rec := &event.Recorder{}
	m := newManager(managerDeps{
		cat:  newCatalog(project(skills...), nil),
		arts: artifact.NewStore(rand.NewChaCha8([32]byte{3})),
		box:  newToolbox(nil, nil),
		emit: rec.Emit,
		max:  max,
	})
	return m, rec
}

func loadedIDs(m *manager) []string {
	var out []string
	for _, l := range m.loaded {
		out = append(out, l.skill.ID)
	}
	return out
}

// TestManagerLRU drives the manager directly through a sequence of reads
// (L1, L4, L5, C2): the LRU order after each, what was evicted, the
// events and the transcript's context entries.
func TestManagerLRU(t *testing.T) {
	testpar.UnlessRace(t)
	m, rec := newTestManager(2, skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelInline), skill("cc", "1.0.0", spec.ChannelHandle))
	tr := transcript.New(nil)
	steps := []struct {
		read     string
		wantCode string // "" for a receipt
		loaded   []string
	}{
		{read: "aa", loaded: []string{"aa"}},
		{read: "bb", loaded: []string{"aa", "bb"}},
		{read: "aa", loaded: []string{"bb", "aa"}}, // re-read: active, nothing loaded
		{read: "cc", loaded: []string{"aa", "cc"}}, // evicts bb, the least recently read
		{read: "Not-An-Id", wantCode: codeIDInvalid, loaded: []string{"aa", "cc"}},
		{read: "dd", wantCode: codeNotEnabled, loaded: []string{"aa", "cc"}}, // not enabled
	}
	var aaState string
	for i, st := range steps {
		res := m.read(context.Background(), st.read, tr)
		if res.IsError != (st.wantCode != "") || res.Code != st.wantCode {
			t.Fatalf("step %d: read %s = {IsError %v, Code %q}, want code %q", i+1, st.read, res.IsError, res.Code, st.wantCode)
		}
		if got := loadedIDs(m); !slices.Equal(got, st.loaded) {
			t.Fatalf("step %d: loaded %v, want %v", i+1, got, st.loaded)
		}
		if i == 0 {
			_, l := m.find("aa")
			aaState = fmt.Sprintf("%p", l.state)
		}
	}
	// The re-read kept aa's load (and its per-load state, L4).
	if _, l := m.find("aa"); fmt.Sprintf("%p", l.state) != aaState {
		t.Error("re-reading aa replaced its load")
	}
	if _, l := m.find("aa"); l.handle == "" || l.channel != spec.ChannelHandle {
		t.Errorf("aa: channel %s handle %q, want a handle skill with a handle", l.channel, l.handle)
	}
	var evs []string
	for _, e := range rec.Events() {
		evs = append(evs, e.Type+" "+e.Skill+" "+e.Reason)
	}
	want := []string{"skill.loaded aa read", "skill.loaded bb read", "skill.unloaded bb evicted", "skill.loaded cc read"}
	if !slices.Equal(evs, want) {
		t.Errorf("events %q, want %q", evs, want)
	}
	var reasons []transcript.Reason
	for _, e := range tr.Entries() {
		if e.Context != nil {
			reasons = append(reasons, e.Context.Reason)
		}
	}
	if want := []transcript.Reason{reasonRead, reasonRead, transcript.ReasonReread, reasonRead}; !slices.Equal(reasons, want) {
		t.Errorf("context entries %v, want %v (L5)", reasons, want)
	}
}

// TestManagerSync: a catalog change unloads what it no longer carries
// with the same revision (C4).
func TestManagerSync(t *testing.T) {
	testpar.UnlessRace(t)
	m, rec := newTestManager(3, skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	tr := transcript.New(nil)
	m.read(context.Background(), "aa", tr)
	m.read(context.Background(), "bb", tr)
	m.cat.set(project(skill("aa", "2.0.0", spec.ChannelHandle)))
	m.sync(tr)
	if got := loadedIDs(m); len(got) != 0 {
		t.Errorf("loaded after the change = %v, want none", got)
	}
	var reasons []string
	for _, e := range rec.Events() {
		if e.Type == event.SkillUnloaded {
			reasons = append(reasons, e.Skill+" "+e.Reason)
		}
	}
	if want := []string{"aa " + string(reasonVersionChanged), "bb " + string(reasonDisabled)}; !slices.Equal(reasons, want) {
		t.Errorf("unloads %q, want %q", reasons, want)
	}
}
