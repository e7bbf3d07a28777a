package engine

import (
	"strings"
	"testing"
)

// Requests ask for prompt caching by default, with one key per run and
// generator; `cache: off` asks for none.
func TestRequestsAskForCaching(t *testing.T) {
	for _, off := range []bool{false, true} {
		p := project(skill("aa", "1.0.0", ""))
		p.Workflow.NoCache = off
		res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir()}, read("aa"), say("done"))
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range m.requests() {
			if req.Cache == off {
				t.Errorf("cache: off=%v, request Cache = %v", off, req.Cache)
			}
			want := ""
			if !off {
				want = "fsd/" + res.RunID + "/host"
			}
			if req.CacheKey != want || strings.Contains(req.CacheKey, "sk-") {
				t.Errorf("cache: off=%v, CacheKey = %q, want %q", off, req.CacheKey, want)
			}
		}
	}
}
