package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tokens"
)

// windowTokens counts what a request's window costs, as request events do.
func windowTokens(req *model.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += tokens.Count(m.Text)
		for _, c := range m.Calls {
			n += tokens.Count(c.Name) + tokens.Count(string(c.Args))
		}
	}
	return n
}

var readOn = regexp.MustCompile(`\n\[bytes \d+-\d+ of \d+; read on with artifact_read get=cat offset=(\d+)\]$`)

// A command printing 1 MiB: the next request grows by less than 1,000
// tokens (a head preview, the size and a handle), the readers page the
// whole output back, and the transcript on disk keeps it whole.
func TestSpoolLargeResult(t *testing.T) {
	testpar.UnlessRace(t)
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.Dir = t.TempDir()
	var big strings.Builder
	for i := 0; big.Len() < 1<<20; i++ {
		fmt.Fprintf(&big, "line %06d: the quick brown fox jumps over the lazy dog, again and again.\n", i)
	}
	out := big.String()[:1<<20]
	if err := os.WriteFile(filepath.Join(s.Dir, "big.txt"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Tools = append(s.Tools, cmdTool("dump", 0, "cat", filepath.Join(s.Dir, "big.txt")))
	p := project(s)
	p.Workflow.Limits.MaxSteps = 100
	var handle string
	var pages strings.Builder
	page := func(req *model.Request) *model.Response {
		last := lastResult(req)
		off := 0
		if last.Name == "artifact_read" {
			if last.IsError {
				t.Fatalf("artifact_read get=cat: %s", last.Text)
			}
			m := readOn.FindStringSubmatchIndex(last.Text)
			if m == nil {
				pages.WriteString(last.Text)
				return &model.Response{Text: "read it all"}
			}
			pages.WriteString(last.Text[:m[0]])
			off, _ = strconv.Atoi(last.Text[m[2]:m[3]])
		} else {
			handle = last.Spool
		}
		return call("artifact_read", map[string]any{"get": "cat", "handle": handle, "offset": off})(req)
	}
	steps := []step{read("ops"), call("dump", nil)}
	for range 90 {
		steps = append(steps, page)
	}
	res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir()}, steps...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "read it all" {
		t.Fatalf("answer %q", res.Answer)
	}
	reqs := m.requests()
	before, after := windowTokens(reqs[1]), windowTokens(reqs[2])
	t.Logf("window tokens before the 1 MiB result %d, after %d (+%d)", before, after, after-before)
	if after-before >= 1000 {
		t.Errorf("the 1 MiB result grew the next request by %d tokens, want < 1,000", after-before)
	}
	kept := lastResult(reqs[2])
	if kept.Spool == "" || !strings.Contains(kept.Text, "[result kept as artifact "+kept.Spool+": 1048576 bytes") {
		t.Errorf("preview: %.300q", kept.Text)
	}
	if !strings.HasPrefix(kept.Text[strings.Index(kept.Text, "\n")+1:], "line 000000: the quick") {
		t.Errorf("preview does not start with the output's head: %.300q", kept.Text)
	}
	if !has(toolNames(reqs[2]), "artifact_read") {
		t.Error("no reader offered to page through the kept result")
	}
	if pages.String() != out {
		t.Errorf("paged back %d bytes, want the %d bytes printed", pages.Len(), len(out))
	}
	whole := false
	for _, e := range readTranscript(t, res.Dir, "transcript.jsonl") {
		if e.Message != nil && e.Message.Name == "dump" {
			whole = e.Message.Text == out && e.Message.Spool == kept.Spool
		}
	}
	if !whole {
		t.Error("the transcript does not keep the whole result with its handle")
	}
}

// Results under the limit stay whole in the window, and reads of a kept
// result's handle need no skill loaded: the result is work (L5), not
// instructions, so an unload never reclaims it.
func TestSpoolSmallResultStaysInline(t *testing.T) {
	testpar.UnlessRace(t)
	s := skill("ops", "1.0.0", spec.ChannelInline)
	p := project(s)
	p.Workflow.Limits.MaxResultTokens = 5
	_, m, _, err := runWith(t, p, Options{},
		read("ops"),
		call("ops_echo", map[string]string{"text": "hi"}),                       // "ops says hi": 3 tokens
		call("ops_echo", map[string]string{"text": strings.Repeat("x y ", 50)}), // over 5 tokens
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if r := lastResult(reqs[2]); r.Spool != "" || r.Text != "ops says hi" {
		t.Errorf("small result: %+v", r)
	}
	if r := lastResult(reqs[3]); r.Spool == "" || !strings.HasPrefix(r.Text, "[result kept as artifact ") {
		t.Errorf("large result: %.200q", r.Text)
	}
}
