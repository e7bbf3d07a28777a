package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/trust"
)

// An untrusted skill loads, its instructions and its reply, state and
// store tools work, its envelope says trust="untrusted", and its command
// tool answers a refusal that names the skill and the folder to --trust —
// without starting a process. A trusted skill in the same run runs its
// command.
func TestUntrustedSkillCommandRefused(t *testing.T) {
	testpar.UnlessRace(t)
	base := t.TempDir()
	trusted, untrusted := filepath.Join(base, "project"), filepath.Join(base, "elsewhere")
	for _, d := range []string{trusted, untrusted} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	marker := filepath.Join(base, "ran")
	touch := spec.Tool{Run: spec.ToolRun{Kind: spec.RunCommand, Command: []string{"touch", marker}}}

	out := skill("out", "1.0.0", spec.ChannelInline)
	out.Dir = untrusted
	touch.Name = "out_touch"
	out.Tools = append(out.Tools, touch)
	in := skill("in", "1.0.0", spec.ChannelHandle)
	in.Dir = trusted
	touch.Name = "in_touch"
	in.Tools = append(in.Tools, touch)

	roots, err := trust.New([]string{trusted})
	if err != nil {
		t.Fatal(err)
	}
	var ctxs []string
	host := scriptFunc([]step{
		read("out"),
		call("out_touch", nil),
		call("out_echo", map[string]string{"text": "hi"}),
		call("out_setstore", map[string]string{"key": "k", "value": "v"}),
		read("in"),
		say("done"),
	}, nil)
	var seen []model.Message
	res, _, err := funcRun(t, context.Background(), project(out, in), Options{Trusted: roots.Skill},
		func(ctx context.Context, req *model.Request) (*model.Response, error) {
			ctxs = append(ctxs, req.Context)
			if req.Caller.Step > 0 {
				seen = append(seen, lastResult(req))
			}
			return host(ctx, req)
		})
	if err != nil || res.Answer != "done" {
		t.Fatalf("answer %q, err %v", res.Answer, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the untrusted skill's command ran")
	}
	refusal := seen[1]
	for _, want := range []string{"tool out_touch of skill out did not run", "not trusted", "--trust " + untrusted} {
		if !refusal.IsError || !strings.Contains(refusal.Text, want) {
			t.Errorf("refusal lacks %q: %+v", want, refusal)
		}
	}
	if seen[2].IsError || seen[2].Text != "out says hi" {
		t.Errorf("reply tool of an untrusted skill: %+v", seen[2])
	}
	if seen[3].IsError {
		t.Errorf("store tool of an untrusted skill: %+v", seen[3])
	}
	if !strings.Contains(ctxs[1], `<skill id="out" version="1.0.0" channel="inline" trust="untrusted"`) ||
		!strings.Contains(ctxs[1], "BODY-OF-out") {
		t.Errorf("the inline envelope should carry the body and trust=\"untrusted\":\n%s", ctxs[1])
	}
	if last := ctxs[len(ctxs)-1]; !strings.Contains(last, `<skill id="in" version="1.0.0" channel="handle"`) ||
		!strings.Contains(last, `trust="trusted"`) {
		t.Errorf("the trusted handle skill's pointer should say trust=\"trusted\":\n%s", last)
	}
}

// The trusted skill's command runs; nil Options.Trusted trusts every skill
// (code that builds a run itself decides its own trust).
func TestTrustedSkillCommandRuns(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name     string
		useRoots bool // trust the skill's folder; else Options.Trusted is nil
	}{
		{"under a root", true},
		{"nil trusts all", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			s := skill("in", "1.0.0", spec.ChannelInline)
			s.Dir = dir
			s.Tools = append(s.Tools, spec.Tool{Name: "in_touch", Run: spec.ToolRun{Kind: spec.RunCommand, Command: []string{"touch", marker}}})
			opts := Options{}
			if tc.useRoots {
				roots, err := trust.New([]string{dir})
				if err != nil {
					t.Fatal(err)
				}
				opts.Trusted = roots.Skill
			}
			_, _, err := funcRun(t, context.Background(), writable(project(s), dir), opts,
				scriptFunc([]step{read("in"), call("in_touch", nil), say("done")}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Error("the trusted skill's command did not run")
			}
		})
	}
}
