package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// K8: re-reading a loaded skill makes it active without touching the
// system block or the tools: the request after the re-read begins with
// every byte of the one before, and only its last, volatile message says
// which skill is active.
func TestRereadLeavesTheSystemBlock(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelInline), skill("bb", "1.0.0", spec.ChannelHandle))
	_, m, _, err := runWith(t, p, Options{}, read("aa"), read("bb"), read("aa"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	before, after := reqs[2], reqs[3] // after bb's read, after aa's re-read
	if before.Context != after.Context {
		t.Errorf("the re-read changed the system block:\n%s\n---\n%s", before.Context, after.Context)
	}
	if strings.Contains(after.Context, `active="`) || strings.Contains(after.Context, "<active_skill") {
		t.Errorf("the system block says which skill is active:\n%s", after.Context)
	}
	if !strings.Contains(after.Context, "The skill listed last is the active one") {
		t.Errorf("the system block does not say how to tell the active skill:\n%s", after.Context)
	}
	if !reflect.DeepEqual(before.Tools, after.Tools) {
		t.Errorf("the re-read changed the tools: %v, then %v", toolNames(before), toolNames(after))
	}
	stable := windowOf(before.Messages)
	if len(after.Messages) <= len(stable) || !reflect.DeepEqual(stable, after.Messages[:len(stable)]) {
		t.Errorf("the request after the re-read does not begin with the one before:\n%+v\n---\n%+v", stable, after.Messages)
	}
	// Only the re-read makes a skill active that is not the one loaded
	// last, and only then is it said.
	for i, want := range []string{"", "", "", `<active_skill id="aa" version="1.0.0"/>`} {
		got := ""
		if last := reqs[i].Messages[len(reqs[i].Messages)-1]; last.Volatile {
			got = last.Text
		}
		if got != want {
			t.Errorf("request %d: volatile part %q, want %q", i+1, got, want)
		}
	}
}
