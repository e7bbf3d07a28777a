package engine

import (
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// A run's clock stamps everything its record holds: run.json, events,
// requests and the transcripts' entries, so their times line up (the
// timeline of fsd ui draws them together).
func TestRunClockStampsTheRecord(t *testing.T) {
	testpar.UnlessRace(t)
	var mu sync.Mutex
	at := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		at = at.Add(time.Second)
		return at
	}
	res, _, _, err := runWith(t, project(skill("ops", "1.0.0", spec.ChannelInline)), Options{RunsDir: t.TempDir(), Now: now},
		read("ops"), call("ops_echo", map[string]string{"text": "hi"}), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := runrecord.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	stamped := func(what string, tm time.Time) {
		if tm.Year() != 2001 {
			t.Errorf("%s is stamped %v, not by the run's clock", what, tm)
		}
	}
	stamped("run.json's start", rec.Summary.Started)
	for _, e := range rec.Events {
		stamped("event "+e.Type, e.Time)
	}
	entries := 0
	for _, g := range rec.Gens {
		for _, e := range g.Entries {
			stamped(g.Name+"'s entry", e.Time)
			entries++
		}
		for _, st := range g.Steps {
			stamped(g.Name+"'s request", st.Sent)
		}
	}
	if entries == 0 {
		t.Fatal("the record has no transcript entries")
	}
}
