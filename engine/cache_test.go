package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// Requests ask for prompt caching by default, with one key per workflow
// and agent, the same in every run; `cache: per-run` keys them per run
// and generator; `cache: off` asks for none.
func TestRequestsAskForCaching(t *testing.T) {
	testpar.UnlessRace(t)
	for _, c := range []string{"on", "per-run", "off"} {
		t.Run(c, func(t *testing.T) {
			p := project(skill("aa", "1.0.0", ""))
			p.Workflow.NoCache, p.Workflow.CachePerRun = c == "off", c == "per-run"
			res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir()}, read("aa"), say("done"))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"on": "fsd/" + p.Workflow.Name + "/host", "per-run": "fsd/" + res.RunID + "/host"}[c]
			for _, req := range m.requests() {
				if req.Cache == (c == "off") {
					t.Errorf("cache: %s, request Cache = %v", c, req.Cache)
				}
				if req.CacheKey != want || strings.Contains(req.CacheKey, "sk-") {
					t.Errorf("cache: %s, CacheKey = %q, want %q", c, req.CacheKey, want)
				}
			}
		})
	}
}

// Re-reading a loaded skill makes it active and nothing else: the tool
// list, the start of every request's cacheable prefix, stays byte for
// byte what it was, so a provider's prompt cache still serves it.
func TestRereadKeepsToolList(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelInline))
	_, m, _, err := runWith(t, p, Options{}, read("aa"), read("bb"), read("aa"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	before, err := json.Marshal(reqs[2].Tools)
	if err != nil {
		t.Fatal(err)
	}
	after, err := json.Marshal(reqs[3].Tools)
	if err != nil {
		t.Fatal(err)
	}
	if !has(toolNames(reqs[2]), "aa_echo") || !has(toolNames(reqs[2]), "bb_echo") {
		t.Fatalf("tools before the re-read: %v, want both skills'", toolNames(reqs[2]))
	}
	if !bytes.Equal(before, after) {
		t.Errorf("re-reading aa changed the tool list:\nbefore %v\nafter  %v", toolNames(reqs[2]), toolNames(reqs[3]))
	}
}
