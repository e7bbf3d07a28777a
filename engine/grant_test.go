package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// A15, A16: a loaded trusted skill's allowed-tools lets a call that would
// ask run without asking, on record; once the skill is evicted the call
// asks again. An untrusted skill, a tool's own approve and --approve deny
// each keep the question.
func TestAllowedToolsGrant(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name     string
		own      spec.Approve // the effect tool's own approve
		trusted  bool         // the granting skill
		mode     approval.Mode
		granted  int    // calls that ran without asking
		asked    int    // calls a person was asked about
		ran      string // what the effect tool logged
		deniedBy string // the mode's answer, when it answers
	}{
		{name: "trusted", trusted: true, granted: 1, asked: 1, ran: "host/s3/c1 1|host/s5/c1 2"},
		{name: "untrusted", trusted: false, asked: 2, ran: "host/s3/c1 1|host/s5/c1 2"},
		{name: "own approve", own: spec.ApproveAlways, trusted: true, asked: 2, ran: "host/s3/c1 1|host/s5/c1 2"},
		{name: "deny", trusted: true, mode: approval.Deny, ran: "", deniedBy: "deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "calls.log")
			grants := skill("grants", "1.0.0", spec.ChannelInline)
			grants.AllowedTools = []string{"Read", "Bash(git diff:*)", "effect"}
			p := writable(project(grants, approvalSkill(log, tc.own), skill("other", "1.0.0", spec.ChannelInline)), filepath.Dir(log))
			p.Workflow.Approve = spec.ApproveAlways
			p.Workflow.Limits.MaxLoadedSkills = 2
			var answers []runrecord.Answer
			for range tc.asked {
				answers = append(answers, runrecord.Answer{Decision: runrecord.Approved, By: "test"})
			}
			opts := Options{Approve: tc.mode, Trusted: func(s *spec.Skill) bool { return s.ID != "grants" || tc.trusted }}
			out := runAnswering(t, p, opts, answers,
				read("grants"), read("ops"),
				call("effect", map[string]int{"n": 1}), // grants is loaded
				read("other"),                          // evicts grants, the least recently read
				call("effect", map[string]int{"n": 2}),
				say("done"))
			if out.err != nil {
				t.Fatal(out.err)
			}
			if got := strings.Join(ranLines(t, log), "|"); got != tc.ran {
				t.Errorf("the effect tool ran %q, want %q", got, tc.ran)
			}
			g := ofType(out.events, event.ApprovalGranted)
			if len(g) != tc.granted {
				t.Fatalf("%d calls granted, want %d: %+v", len(g), tc.granted, g)
			}
			if tc.granted > 0 && (g[0].Approval != "host/s3/c1" || g[0].Skill != "grants" || g[0].Reason != "effect" || g[0].Tool != "effect") {
				t.Errorf("granted event %+v", g[0])
			}
			if n := len(ofType(out.events, event.ApprovalRequested)); n != tc.asked {
				t.Errorf("%d calls asked, want %d", n, tc.asked)
			}
			if tc.deniedBy != "" {
				ans := ofType(out.events, event.ApprovalAnswered)
				if len(ans) != 2 || ans[0].By != tc.deniedBy || ans[0].Approval != "host/s3/c1" {
					t.Errorf("answers %+v, want both calls answered by %s", ans, tc.deniedBy)
				}
			}
			granted, err := runrecord.ReadGranted(out.res.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(granted) != tc.granted {
				t.Fatalf("approvals.jsonl has %d granted lines, want %d", len(granted), tc.granted)
			}
			if tc.granted > 0 {
				if l := granted[0]; l.Call != "host/s3/c1" || *l.Grant != (runrecord.Grant{Skill: "grants", Rule: "effect"}) {
					t.Errorf("granted line %+v %+v", l.PendingCall, l.Grant)
				}
			}
		})
	}
}

// A15: through the built-in tools, a Bash entry allows its command line and
// nothing chained to it, and a path entry nothing outside its folder: those
// calls ask (and, rejected here, do nothing).
func TestAllowedToolsBashAndPathEntries(t *testing.T) {
	testpar.UnlessRace(t)
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.AllowedTools = []string{"Bash(echo:*)", "Write(notes/**)"}
	p := builtinProject(s)
	p.Workflow.Approve = spec.ApproveAlways
	ws := t.TempDir()
	reject := runrecord.Answer{Decision: runrecord.Rejected, Reason: "no", By: "test"}
	out := runAnswering(t, p, Options{Workspace: ws}, []runrecord.Answer{reject, reject, reject},
		read("ops"),
		call("Bash", map[string]string{"command": "echo granted > /dev/null"}),
		call("Bash", map[string]string{"command": "echo granted; touch chained"}),
		call("Bash", map[string]string{"command": "echo granted"}),
		call("Write", map[string]string{"file_path": "notes/../escaped.md", "content": "x"}),
		call("Write", map[string]string{"file_path": "notes/a.md", "content": "granted"}),
		say("done"))
	if out.err != nil {
		t.Fatal(out.err)
	}
	var granted []string
	for _, e := range ofType(out.events, event.ApprovalGranted) {
		granted = append(granted, e.Approval+" "+e.Reason)
	}
	if want := "host/s4/c1 Bash(echo:*)|host/s6/c1 Write(notes/**)"; strings.Join(granted, "|") != want {
		t.Errorf("granted %q, want %q", granted, want)
	}
	var asked []string
	for _, e := range ofType(out.events, event.ApprovalRequested) {
		asked = append(asked, e.Approval)
	}
	if want := "host/s2/c1|host/s3/c1|host/s5/c1"; strings.Join(asked, "|") != want {
		t.Errorf("asked %q, want %q", asked, want)
	}
	for name, want := range map[string]bool{"chained": false, "escaped.md": false, "notes/a.md": true} {
		if _, err := os.Stat(filepath.Join(ws, filepath.FromSlash(name))); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", name, err == nil, want)
		}
	}
}
