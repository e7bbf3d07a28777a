package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/promptcache"
)

// K6: two runs of a workflow that differ only in their input part where
// the input enters, the host's first user message: the tools and the
// system block before it are the same bytes, so a prompt cache the first
// run wrote serves every request of the second through its system block.
func TestRunsOfOtherInputsShareToolsAndSystem(t *testing.T) {
	wf := crossRunWorkflow(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	runOnce := func(input string) []string {
		srv, bodies := scriptedAnthropicUsage(t, func(gen string, step int) fakeReply {
			if strings.Contains(gen, "| Task note") {
				return fakeReply{text: "Welcome aboard!"}
			}
			host := []fakeReply{helloReplies[0], helloReplies[1], helloReplies[2], helloReplies[3], helloReplies[5]}
			return host[step]
		}, map[string]any{"input_tokens": 10, "output_tokens": 5})
		t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
		code, _, errs := fsd(t, "run", wf, "-i", input, "--model", "anthropic/claude-test", "--runs-dir", filepath.Join(t.TempDir(), "runs"))
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for g, reqs := range bodies() {
			if !strings.Contains(g, "| Task note") {
				return reqs
			}
		}
		t.Fatal("no request of the host")
		return nil
	}
	ada, bob := runOnce("Welcome Ada to the team."), runOnce("Welcome Bob to the team.")
	if len(ada) != 5 || len(bob) != 5 {
		t.Fatalf("host requests %d and %d, want 5 each", len(ada), len(bob))
	}
	var cache promptcache.Cache
	for _, b := range ada {
		if _, err := cache.Send([]byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range bob {
		s, err := cache.Send([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		head := toolsAndSystem(t, b)
		if s.Read < head {
			t.Errorf("request %d of the run with another input: the cache served %d blocks, want at least the %d of its tools and system block", i+1, s.Read, head)
		}
		if s.Read > head && i == 0 {
			t.Errorf("request 1 of the run with another input: the cache served %d blocks, past its tools and system (%d): the input is not in the first message", s.Read, head)
		}
	}
}

// toolsAndSystem is how many blocks of an Anthropic body its tools and
// system block are.
func toolsAndSystem(t *testing.T, body string) int {
	t.Helper()
	var b struct {
		Tools  []json.RawMessage `json:"tools"`
		System []json.RawMessage `json:"system"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatal(err)
	}
	return len(b.Tools) + len(b.System)
}
