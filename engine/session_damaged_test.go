package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// A session whose record no longer holds the turns session.json lists —
// the journal cut, emptied or gone, run.json gone, session.json gone or
// edited to a place that is none — is refused with an error naming the
// session, before any turn runs: going on restated nothing (the model
// lost the conversation while session.json counted its turns), wrote the
// next turn over the first, or panicked on a negative offset.
func TestSessionRecordNotTheTurns(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	base := t.TempDir()
	for _, msg := range []string{"first", "second"} {
		if _, _, err := turn(t, base, "chat", p, msg, read("aa"), say(msg)); err != nil {
			t.Fatal(err)
		}
	}
	editTurns := func(edit func([]map[string]any) []map[string]any) func(string) {
		return func(dir string) {
			path := filepath.Join(dir, runrecord.SessionFile)
			b, _ := os.ReadFile(path)
			var s map[string]any
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			var turns []map[string]any
			for _, v := range s["turns"].([]any) {
				turns = append(turns, v.(map[string]any))
			}
			s["turns"] = edit(turns)
			b, _ = json.Marshal(s)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	journalLines := func(n int) func(string) {
		return func(dir string) {
			path := filepath.Join(dir, runrecord.JournalFile)
			b, _ := os.ReadFile(path)
			lines := strings.SplitAfter(string(b), "\n")
			if err := os.WriteFile(path, []byte(strings.Join(lines[:n], "")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(name string) func(string) {
		return func(dir string) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name   string
		damage func(dir string)
	}{
		{"journal emptied", journalLines(0)},
		{"journal cut before turn 2", journalLines(3)},
		{"journal gone", remove(runrecord.JournalFile)},
		{"run.json gone", remove(runrecord.RunFile)},
		{"session.json gone", remove(runrecord.SessionFile)},
		{"first turn removed", editTurns(func(ts []map[string]any) []map[string]any { return ts[1:] })},
		{"negative message", editTurns(func(ts []map[string]any) []map[string]any { ts[1]["message"] = -5; return ts })},
		{"turns out of order", editTurns(func(ts []map[string]any) []map[string]any { ts[0], ts[1] = ts[1], ts[0]; return ts })},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(filepath.Join(dir, "chat"), os.DirFS(filepath.Join(base, "chat"))); err != nil {
				t.Fatal(err)
			}
			c.damage(filepath.Join(dir, "chat"))
			s, err := OpenSession(dir, "chat")
			if err == nil {
				defer s.Close()
				m := &recModel{steps: []step{say("third")}}
				_, err = s.Turn(context.Background(), p, Options{Model: m}, "third")
			}
			if err == nil || !strings.Contains(err.Error(), "session chat") || strings.Contains(err.Error(), "internal error") {
				t.Fatalf("a turn of a session whose %s = %v, want an error naming the session's damaged record", c.name, err)
			}
		})
	}
}
