package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// turn runs one turn of session name under dir, in a Session of its own
// (as a new process would), on steps; it returns the model.
func turn(t *testing.T, dir, name string, p *spec.Project, msg string, steps ...step) (*recModel, *Result, error) {
	t.Helper()
	s, err := OpenSession(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := &recModel{steps: steps}
	res, err := s.Turn(context.Background(), p, Options{Model: m}, msg)
	return m, res, err
}

// Q1, Q3: what a turn loaded, its per-load state, the store and the
// handles are there in the next turn, which calls the skill's tools
// without reading it; an eviction in turn 2 holds in turn 3.
func TestSessionKeepsSkillsAcrossTurns(t *testing.T) {
	dir := t.TempDir()
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle),
		skill("cc", "1.0.0", spec.ChannelHandle), skill("dd", "1.0.0", spec.ChannelHandle))
	var handle string
	m1, _, err := turn(t, dir, "chat", p, "first",
		read("aa"),
		call("aa_setstore", map[string]string{"key": "k", "value": "kept"}),
		call("aa_setstate", map[string]string{"key": "s", "value": "per-load"}),
		func(req *model.Request) *model.Response {
			i := strings.Index(req.Context, `handle="`)
			handle = req.Context[i+8 : i+8+strings.Index(req.Context[i+8:], `"`)]
			return &model.Response{Text: "one"}
		})
	if err != nil {
		t.Fatal(err)
	}
	_ = m1
	m2, _, err := turn(t, dir, "chat", p, "second",
		func(req *model.Request) *model.Response {
			if !strings.Contains(req.Context, `handle="`+handle+`"`) {
				t.Errorf("turn 2's context lost handle %s:\n%s", handle, req.Context)
			}
			return call("aa_state", map[string]string{"key": "s"})(req)
		},
		call("aa_store", map[string]string{"key": "k"}),
		read("bb"), read("cc"), read("dd"),
		say("two"))
	if err != nil {
		t.Fatal(err)
	}
	r2 := m2.requests()
	if got := lastResult(r2[1]); got.IsError || !strings.Contains(got.Text, "per-load") {
		t.Errorf("turn 2: aa_state without a read = %+v, want the per-load value", got)
	}
	if got := lastResult(r2[2]); got.IsError || !strings.Contains(got.Text, "kept") {
		t.Errorf("turn 2: aa_store = %+v, want the stored value", got)
	}
	s, err := OpenSession(dir, "chat")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range s.Loaded() {
		ids = append(ids, l.ID+"@"+l.Version)
	}
	s.Close()
	if got := strings.Join(ids, ","); got != "bb@1.0.0,cc@1.0.0,dd@1.0.0" {
		t.Errorf("Loaded after turn 2 = %s", got)
	}
	m3, _, err := turn(t, dir, "chat", p, "third",
		call("aa_state", map[string]string{"key": "s"}),
		read("aa"),
		call("aa_state", map[string]string{"key": "s"}),
		call("aa_store", map[string]string{"key": "k"}),
		say("three"))
	if err != nil {
		t.Fatal(err)
	}
	r3 := m3.requests()
	if got := lastResult(r3[1]); !got.IsError || got.Text != "Unknown tool: aa_state" {
		t.Errorf("turn 3: evicted aa's tool = %+v, want Unknown tool", got)
	}
	if got := lastResult(r3[3]); strings.Contains(got.Text, "per-load") {
		t.Errorf("turn 3: aa's per-load state survived its eviction: %+v", got)
	}
	if got := lastResult(r3[4]); !strings.Contains(got.Text, "kept") {
		t.Errorf("turn 3: the store lost its value: %+v", got)
	}
	if first := r3[0].Messages; len(first) == 0 || first[0].Role != model.User {
		t.Errorf("turn 3's window does not start at a user message: %+v", first)
	}
}

// Q4: a second writer is refused naming the holder's pid.
func TestSessionOneWriter(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSession(dir, "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = OpenSession(dir, "busy")
	if !errors.Is(err, ErrSessionBusy) || !strings.Contains(err.Error(), "pid ") {
		t.Fatalf("second OpenSession = %v, want ErrSessionBusy naming the pid", err)
	}
}
