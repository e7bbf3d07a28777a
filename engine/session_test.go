package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// Q5, Q7: a skill whose version changed, and one removed, between turns
// are unloaded as the next turn starts, each with the context line a live
// reload writes; the store stays; each turn records its digests.
func TestSessionSkillChangedBetweenTurns(t *testing.T) {
	dir := t.TempDir()
	p1 := project(skill("aa", "1.0.0", spec.ChannelInline), skill("bb", "1.0.0", spec.ChannelInline), skill("cc", "1.0.0", spec.ChannelInline))
	if _, _, err := turn(t, dir, "edit", p1, "first",
		read("aa"), read("bb"), read("cc"),
		call("aa_setstore", map[string]string{"key": "k", "value": "kept"}),
		say("one")); err != nil {
		t.Fatal(err)
	}
	p2 := project(skill("aa", "2.0.0", spec.ChannelInline), skill("cc", "1.0.0", spec.ChannelInline))
	p2.Workflow.Host.Prompt = "You are a changed host."
	m, _, err := turn(t, dir, "edit", p2, "second",
		call("aa_store", map[string]string{"key": "k"}),
		read("aa"),
		call("aa_store", map[string]string{"key": "k"}),
		say("two"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	first := reqs[0]
	if strings.Contains(first.Context, `<skill id="aa"`) || strings.Contains(first.Context, `<skill id="bb"`) || !strings.Contains(first.Context, `<skill id="cc"`) {
		t.Errorf("turn 2's first context block should hold cc only:\n%s", first.Context)
	}
	var lines []string
	for _, msg := range first.Messages {
		if msg.Role == model.Context {
			lines = append(lines, msg.Text)
		}
	}
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "unloaded skill aa 1.0.0 (version changed: 2.0.0") || !strings.Contains(all, "unloaded skill bb") || !strings.Contains(all, "disabled") {
		t.Errorf("turn 2's window lacks the unload lines:\n%s", all)
	}
	if got := lastResult(reqs[1]); !got.IsError || got.Text != "Unknown tool: aa_store" {
		t.Errorf("aa's tool after its change = %+v, want Unknown tool", got)
	}
	if got := lastResult(reqs[3]); !strings.Contains(got.Text, "kept") {
		t.Errorf("aa's store after the re-read = %+v, want kept", got)
	}
	s, err := OpenSession(dir, "edit")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	turns := s.file.Turns
	if len(turns) != 2 || strings.Join(turns[1].Dropped, ",") != "aa,bb" {
		t.Fatalf("turns = %+v, want two, the second dropping aa and bb", turns)
	}
	var w1, w2 string
	for k, v := range turns[0].Digests {
		if strings.HasPrefix(k, "workflow") {
			w1, w2 = v, turns[1].Digests[k]
		}
	}
	if w1 == "" || w2 == "" || w1 == w2 {
		t.Errorf("workflow digests per turn = %q, %q; want both, different", w1, w2)
	}
}

// Q6: an interrupted turn blocks the next until it is resumed or
// abandoned; a resumed turn does not ask the model again for what its
// journal holds; an abandoned turn's call without a result reads that it
// was not run.
func TestSessionInterruptedTurn(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		t.Run(map[bool]string{false: "resume", true: "abandon"}[abandon], func(t *testing.T) {
			dir := t.TempDir()
			p := project(skill("aa", "1.0.0", spec.ChannelInline))
			if _, _, err := turn(t, dir, "cut", p, "first", read("aa"), say("one")); err != nil {
				t.Fatal(err)
			}
			s, err := OpenSession(dir, "cut")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			m := &recModel{steps: []step{
				call("aa_setstore", map[string]string{"key": "k", "value": "v"}),
				func(req *model.Request) *model.Response {
					cancel()
					return call("aa_echo", map[string]string{"text": "x"})(req)
				},
			}}
			_, err = s.Turn(ctx, p, Options{Model: m}, "second")
			s.Close()
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("turn 2 = %v, want interrupted", err)
			}
			if _, err := OpenSession(dir, "cut"); !errors.Is(err, ErrSessionInterrupted) {
				t.Fatalf("OpenSession after an interrupted turn = %v, want ErrSessionInterrupted", err)
			}
			if abandon {
				if err := AbandonTurn(dir, "cut"); err != nil {
					t.Fatal(err)
				}
			} else {
				rs, err := ResumeSession(dir, "cut")
				if err != nil {
					t.Fatal(err)
				}
				rm := &recModel{steps: []step{say("resumed")}}
				res, err := rs.Turn(context.Background(), p, Options{Model: rm}, "")
				rs.Close()
				if err != nil || res.Answer != "resumed" {
					t.Fatalf("resumed turn = %v, %v", res, err)
				}
				if n := len(rm.requests()); n != 1 {
					t.Errorf("the resumed turn asked the model %d times, want 1 (the rest is journaled)", n)
				}
			}
			m3, _, err := turn(t, dir, "cut", p, "third", call("aa_store", map[string]string{"key": "k"}), say("three"))
			if err != nil {
				t.Fatal(err)
			}
			first := m3.requests()[0]
			results := map[string]string{}
			for _, msg := range first.Messages {
				if msg.Role == model.Tool {
					results[msg.CallID] = msg.Text
				}
			}
			for _, msg := range first.Messages {
				for _, c := range msg.Calls {
					if _, ok := results[c.ID]; !ok {
						t.Errorf("turn 3's window holds call %s (%s) without a result", c.ID, c.Name)
					}
				}
			}
			if abandon && !strings.Contains(fmt.Sprint(results), notRunText) {
				t.Errorf("the abandoned call's result = %v, want %q", results, notRunText)
			}
			if got := lastResult(m3.requests()[1]); !strings.Contains(got.Text, `"v"`) && !strings.Contains(got.Text, "v") {
				t.Errorf("the store after turn 2 = %+v", got)
			}
		})
	}
}

// BenchmarkSessionTurn runs a session of 50 turns (each reads a skill,
// sets its store and answers) and reports how long turn 1 and turn 50
// took: a turn restates the turns before it, so this is the price of a
// long session.
func BenchmarkSessionTurn(b *testing.B) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelInline))
	var first, last time.Duration
	for range b.N {
		dir := b.TempDir()
		for n := 1; n <= 50; n++ {
			s, err := OpenSession(dir, "bench")
			if err != nil {
				b.Fatal(err)
			}
			m := &recModel{steps: []step{
				read([]string{"aa", "bb"}[n%2]),
				call("aa_setstore", map[string]string{"key": "k", "value": fmt.Sprint(n)}),
				say(fmt.Sprintf("turn %d", n)),
			}}
			start := time.Now()
			_, err = s.Turn(context.Background(), p, Options{Model: m}, fmt.Sprintf("message %d", n))
			took := time.Since(start)
			s.Close()
			if err != nil {
				b.Fatal(err)
			}
			switch n {
			case 1:
				first += took
			case 50:
				last += took
			}
		}
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N)/1000, "turn1-ms")
	b.ReportMetric(float64(last.Microseconds())/float64(b.N)/1000, "turn50-ms")
}

// NextRequest assembles the next turn's first request from the session
// as the last turn left it, and writes nothing.
func TestSessionNextRequest(t *testing.T) {
	dir := t.TempDir()
	p := project(skill("aa", "1.0.0", spec.ChannelInline))
	if _, _, err := turn(t, dir, "peek", p, "first", read("aa"), say("one")); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSession(dir, "peek")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before, _ := os.ReadFile(filepath.Join(s.Dir(), "journal.jsonl"))
	req, err := s.NextRequest(p, Options{Model: &recModel{}}, "what now?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(req.Context, `<skill id="aa"`) || !has(toolNames(req), "aa_echo") {
		t.Errorf("the next request lacks aa, loaded in turn 1:\n%s", req.Context)
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role != model.User || last.Text != "what now?" {
		t.Errorf("the next request ends with %+v, want the message", last)
	}
	after, _ := os.ReadFile(filepath.Join(s.Dir(), "journal.jsonl"))
	if string(before) != string(after) || s.Turns() != 1 {
		t.Errorf("NextRequest wrote the record: %d turns, journal changed %v", s.Turns(), string(before) != string(after))
	}
	res, err := s.Turn(context.Background(), p, Options{Model: &recModel{steps: []step{say("two")}}}, "second")
	if err != nil || res.Answer != "two" {
		t.Fatalf("a turn after NextRequest = %v, %v", res, err)
	}
}

// Q1, Q2: the board goes on across turns — a task of turn 1 is not run
// again — and a conversation-supply worker of turn 2 inherits whole
// turns of the session, turn 1's included, bounded by its turns:.
func TestSessionBoardAndConversationSupply(t *testing.T) {
	dir := t.TempDir()
	p := project(team())
	sessionTurn := func(msg string, scripts map[string][]step) *multiModel {
		t.Helper()
		s, err := OpenSession(dir, "team")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		m := &multiModel{scripts: scripts}
		if _, err := s.Turn(context.Background(), p, Options{Model: m}, msg); err != nil {
			t.Fatal(err)
		}
		return m
	}
	sessionTurn("FIRST", map[string][]step{
		"host": {read("team"), call("addTask", add("a", "conv")), call("runBoard", nil), say("one")},
		"conv": {say("conv a")},
	})
	m := sessionTurn("SECOND", map[string][]step{
		"host": {call("addTask", add("b", "conv")), call("runBoard", nil), say("two")},
		"conv": {say("conv b")},
	})
	conv := m.requests("conv")
	if len(conv) != 1 || conv[0].Caller.TaskID != "b" {
		t.Fatalf("turn 2's conv requests = %d (want 1, task b's): a task of turn 1 ran again", len(conv))
	}
	var texts []string
	for _, msg := range conv[0].Messages {
		texts = append(texts, msg.Text)
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "FIRST") || !strings.Contains(all, "SECOND") {
		t.Errorf("task b's worker should inherit turns 1 and 2:\n%s", all)
	}
	if r := lastResult(m.requests("host")[0]); r.IsError {
		t.Errorf("addTask in turn 2 without a re-read = %+v", r)
	}
}
