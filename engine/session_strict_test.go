package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// A strict turn failed by a skipped skill is a failed turn of the session,
// with its message, not a failed session whose last turn says finished.
func TestSessionStrictTurnIsRecorded(t *testing.T) {
	dir := t.TempDir()
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	if _, _, err := turn(t, dir, "chat", p, "first", say("one")); err != nil {
		t.Fatal(err)
	}
	p.Skipped = []spec.Skipped{{ID: "bb", Reason: "does not parse"}}
	s, err := OpenSession(dir, "chat")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Turn(context.Background(), p, Options{Model: &recModel{}, Strict: true}, "second")
	s.Close()
	if !errors.Is(err, ErrStrict) {
		t.Fatalf("strict turn: %v; want ErrStrict", err)
	}
	f, err := runrecord.ReadSession(filepath.Join(dir, "chat"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Turns); n != 2 || f.Turns[1].Input != "second" || f.Turns[1].Status != runrecord.TurnFailed {
		t.Errorf("turns %+v; want turn 2 \"second\" failed", f.Turns)
	}
}
