package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// quotedPreview finds the instructions preview of a load line.
var quotedPreview = regexp.MustCompile(`(?m)^  (?:instructions|pointer)(?: \(first \d+ of \d+ characters\))?: ("(?:[^"\\]|\\.)*")$`)

// checkContextLine verifies a context message has the documented form and
// that every preview it carries is at most spec.DefaultPreview characters.
func checkContextLine(text string) error {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, linePrefix) && !strings.HasPrefix(line, "  instructions") && !strings.HasPrefix(line, "  pointer") {
			return fmt.Errorf("context line %q has neither the %q prefix nor a preview", line, linePrefix)
		}
	}
	for _, m := range quotedPreview.FindAllStringSubmatch(text, -1) {
		p, err := strconv.Unquote(m[1])
		if err != nil {
			return fmt.Errorf("preview %s: %v", m[1], err)
		}
		if n := utf8.RuneCountInString(p); n > spec.DefaultPreview {
			return fmt.Errorf("preview of %d characters, at most %d", n, spec.DefaultPreview)
		}
	}
	return nil
}

// windowOf is a request's window: its messages without the board's
// status and the active skill, which request assembly puts last, outside
// the cap as the context block is (K5, K8).
func windowOf(msgs []model.Message) []model.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Volatile {
		return msgs[:n-1]
	}
	return msgs
}

// contextLines returns the texts of a window's context messages.
func contextLines(req *model.Request) []string {
	var out []string
	for _, m := range windowOf(req.Messages) {
		if m.Role == model.Context {
			out = append(out, m.Text)
		}
	}
	return out
}

// longSkill is an inline skill with instructions well past the preview,
// with multi-byte characters across the cut.
func longSkill(id string) *spec.Skill {
	s := skill(id, "1.0.0", spec.ChannelInline)
	s.Instructions = "# " + id + " — guide\n\n" + strings.Repeat("Ünïcode steps for "+id+". ", 20)
	return s
}

// After the fourth read with room for three, the next request's window
// shows the evicted skill's unload line and, still, the line of its load
// with the first 200 characters of its inline instructions; a handle
// skill's line quotes its pointer, never its body. Each line comes after
// the result of the read that made it. A re-read shows its own line.
func TestContextLinesEviction(t *testing.T) {
	testpar.UnlessRace(t)
	aa := longSkill("aa")
	p := project(aa, skill("bb", "1.0.0", spec.ChannelHandle), skill("cc", "1.0.0", spec.ChannelInline), skill("dd", "1.0.0", spec.ChannelHandle))
	_, m, _, err := runWith(t, p, Options{},
		read("aa"), read("bb"), read("cc"), read("bb"), read("dd"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	next := reqs[5]
	body := strings.TrimSpace(aa.Instructions)
	head, total := preview(body, spec.DefaultPreview)
	if utf8.RuneCountInString(head) != 200 || !strings.HasPrefix(body, head) {
		t.Fatalf("setup: preview %q", head)
	}
	hb, hd := handleOf(t, reqs[2].Context, "bb"), handleOf(t, next.Context, "dd")
	want := []string{
		"[fsd context] loaded skill aa 1.0.0 (read; channel inline)\n" +
			"  instructions (first 200 of " + strconv.Itoa(total) + " characters): " + strconv.Quote(head),
		`[fsd context] loaded skill bb 1.0.0 (read; channel handle, handle ` + hb + `)` + "\n" +
			`  pointer: "<skill id=\"bb\" version=\"1.0.0\" channel=\"handle\" handle=\"` + hb + `\" trust=\"trusted\"/>"`,
		`[fsd context] loaded skill cc 1.0.0 (read; channel inline)` + "\n" +
			`  instructions: "# cc\n\nBODY-OF-cc\n\n## Steps\n\nDo the cc steps."`,
		`[fsd context] skill bb 1.0.0 is the active skill again (read again; nothing new loaded)`,
		`[fsd context] unloaded skill aa 1.0.0 (evicted: at most 3 skills stay loaded and it was the least recently read; read_skill it again to use it)` + "\n" +
			`[fsd context] loaded skill dd 1.0.0 (read; channel handle, handle ` + hd + `)` + "\n" +
			`  pointer: "<skill id=\"dd\" version=\"1.0.0\" channel=\"handle\" handle=\"` + hd + `\" trust=\"trusted\"/>"`,
	}
	got := contextLines(next)
	if len(got) != len(want) {
		t.Fatalf("window has %d context lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n---\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("context line %d:\n got %q\nwant %q", i, got[i], want[i])
		}
		if err := checkContextLine(got[i]); err != nil {
			t.Error(err)
		}
	}
	// In transcript order: each line right after the result of its read.
	window := windowOf(next.Messages) // without the active skill, last
	for i, msg := range window {
		if msg.Role == model.Context && (i == 0 || window[i-1].Role != model.Tool || window[i-1].Name != "read_skill") {
			t.Errorf("context line %d does not follow its read's result", i)
		}
	}
	if strings.Contains(next.Context, "aa — guide") {
		t.Error("the evicted skill is still in the context block")
	}
}

func handleOf(t *testing.T, ctx, id string) string {
	t.Helper()
	m := regexp.MustCompile(`id="` + id + `"[^>]*handle="([^"]+)"`).FindStringSubmatch(ctx)
	if m == nil {
		t.Fatalf("no handle for %s in\n%s", id, ctx)
	}
	return m[1]
}

// A version change and a disable each show their line in the next
// request, after the result of the step during which the file changed.
func TestContextLinesVersionChangeAndDisable(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name, want string
		change     func(p *spec.Project)
	}{
		{"version bump", "[fsd context] unloaded skill aa 1.0.0 (version changed: 1.1.0 is on disk now; read_skill it again to load it)",
			func(p *spec.Project) { p.Skills[0] = skill("aa", "1.1.0", spec.ChannelInline) }},
		{"disabled", "[fsd context] unloaded skill aa 1.0.0 (disabled: it is no longer enabled in this project; its tools are gone)",
			func(p *spec.Project) { p.Workflow.Enabled, p.Workflow.EnabledSet = []string{}, true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			wf := filepath.Join(dir, "wf.workflow.yaml")
			if err := os.WriteFile(wf, []byte("name: t\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			p := project(skill("aa", "1.0.0", spec.ChannelInline))
			p.Workflow.File = wf
			reload := func() (*spec.Project, error) {
				np := project(skill("aa", "1.0.0", spec.ChannelInline))
				np.Workflow.File = wf
				tc.change(np)
				return np, nil
			}
			touch := func(*model.Request) *model.Response {
				future := time.Now().Add(time.Hour)
				_ = os.Chtimes(wf, future, future)
				return &model.Response{Calls: []model.ToolCall{{ID: "x", Name: "aa_echo", Args: json.RawMessage(`{"text":"t"}`)}}}
			}
			res, m, _, err := runWith(t, p, Options{Reload: reload, RunsDir: dir}, read("aa"), touch, say("done"))
			if err != nil {
				t.Fatal(err)
			}
			next := m.requests()[2]
			lines := contextLines(next)
			if len(lines) != 2 || lines[1] != tc.want {
				t.Fatalf("context lines %q, want the load's and %q", lines, tc.want)
			}
			if last := next.Messages[len(next.Messages)-1]; last.Role != model.Context {
				t.Errorf("the line is not after the echo's result: last message %s %q", last.Role, last.Text)
			}
			// The record keeps what the model read, on the entry.
			var recorded []string
			for _, e := range readTranscript(t, res.Dir, "transcript.jsonl") {
				if e.Context != nil {
					recorded = append(recorded, e.Context.Line)
				}
			}
			if len(recorded) != 2 || recorded[1] != tc.want {
				t.Errorf("recorded lines %q", recorded)
			}
		})
	}
}

// Context lines are messages of the window: they count toward
// max-transcript-messages, and the window still starts at a user message
// and never separates a call from its result.
func TestContextLinesCountTowardCap(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxTranscriptMessages = 4
	_, m, _, err := runWith(t, p, Options{},
		calls("read_skill", map[string]string{"id": "aa"}, "read_skill", map[string]string{"id": "bb"}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	// user, assistant(2 calls), result, result, line(aa), line(bb): six
	// messages over a cap of 4, in one turn, so the window is the user
	// message and the newest groups within the low-water mark (2): the
	// line of bb. Were lines not counted, the call and its results would
	// fit.
	next := m.requests()[1]
	window := windowOf(next.Messages) // without the active skill, last
	var roles []string
	for _, msg := range window {
		roles = append(roles, string(msg.Role))
	}
	if got := strings.Join(roles, ","); got != "user,context" {
		t.Errorf("window roles = %s, want user,context", got)
	}
	if _, err := transcript.WindowOf(window, 4); err != nil {
		t.Errorf("window is not well formed: %v", err)
	}
}

// A conversation-supply worker inherits the context lines of the turns it
// inherits; reclaim (H4) leaves them alone: they are history, not a
// reader's result.
func TestContextLinesInheritedNotReclaimed(t *testing.T) {
	testpar.UnlessRace(t)
	alpha := skill("alpha", "1.0.0", spec.ChannelHandle)
	p := project(alpha, skill("beta", "1.0.0", spec.ChannelInline), team())
	p.Workflow.Limits.MaxLoadedSkills = 2
	_, m, _, err := runMulti(t, p, Options{}, map[string][]step{
		"host": {
			read("alpha"),
			read("team"),
			read("beta"), // evicts alpha
			call("addTask", add("c", "conv")),
			call("runBoard", nil),
			say("done"),
		},
		"conv": {say("conv done")},
	})
	if err != nil {
		t.Fatal(err)
	}
	host := contextLines(m.requests("host")[4])
	worker := contextLines(m.requests("conv")[0])
	if len(host) != 3 || !strings.HasPrefix(host[2], "[fsd context] unloaded skill alpha 1.0.0 (evicted") {
		t.Fatalf("host lines: %q", host)
	}
	if strings.Join(worker, "\n") != strings.Join(host, "\n") {
		t.Errorf("worker inherited lines\n%q\nwant the host's\n%q", worker, host)
	}
	if !strings.Contains(worker[0], `pointer: "<skill id=\"alpha\"`) {
		t.Errorf("reclaim touched alpha's load line: %q", worker[0])
	}
}
