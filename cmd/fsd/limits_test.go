package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lastLine is the last line of stderr: where a failed command's one error
// line is (progress lines may come before it).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// --timeout bounds the run's wall-clock time. The script's first step
// sleeps far longer than the timeout and wakes only when the run's context
// is done, so the test asserts the outcome, never a duration.
func TestRunTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, workflow, script string
	}{
		{"conversation",
			"name: slow\nmodel: scripted\nscript: slow.script.yaml\nhost: {prompt: hi}\ninput: go\n",
			"host:\n  - {sleep: 1h, say: too late}\n"},
		{"pipeline",
			"name: slow\nmodel: scripted\nscript: slow.script.yaml\ntasks:\n  - {id: a, goal: wait}\n  - {id: b, goal: then, deps: [a]}\ninput: go\n",
			"tasks:\n  a:\n    - {sleep: 1h, say: too late}\n  b:\n    - say: never\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			runs := filepath.Join(dir, "runs")
			write(t, filepath.Join(dir, "slow.workflow.yaml"), tc.workflow)
			write(t, filepath.Join(dir, "slow.script.yaml"), tc.script)
			code, _, errs := fsd(t, "run", filepath.Join(dir, "slow.workflow.yaml"), "--timeout", "50ms", "--runs-dir", runs)
			if code != exitProblems {
				t.Errorf("exit %d, want %d", code, exitProblems)
			}
			last := lastLine(errs)
			// The record is complete and resumable: run.json says
			// interrupted, events end in run.finished, stderr says how.
			recs, _ := os.ReadDir(runs)
			if len(recs) != 1 {
				t.Fatalf("%d run records", len(recs))
			}
			want := "fsd: run timed out after 50ms; resume it with: fsd resume " + recs[0].Name() + " --runs-dir " + runs
			if last != want || strings.Count(errs, "fsd: ") != 1 {
				t.Errorf("stderr should end in one line %q: %q", want, errs)
			}
			rec := filepath.Join(runs, recs[0].Name())
			if sum := string(readAll(t, filepath.Join(rec, "run.json"))); !strings.Contains(sum, `"status": "interrupted"`) {
				t.Errorf("run.json does not say interrupted:\n%s", sum)
			}
			evs := strings.Split(strings.TrimSpace(string(readAll(t, filepath.Join(rec, "events.jsonl")))), "\n")
			if !strings.Contains(evs[len(evs)-1], `"run.finished"`) {
				t.Errorf("events.jsonl does not end in run.finished: %s", evs[len(evs)-1])
			}
		})
	}
}

func TestShortDuration(t *testing.T) {
	for in, want := range map[string]string{"5m": "5m", "1h": "1h", "1h30m": "1h30m", "90s": "1m30s", "50ms": "50ms", "2h0m5s": "2h0m5s"} {
		d, err := time.ParseDuration(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %s, want %s", in, got, want)
		}
	}
}

// Every manifest limit stops `fsd run` before anything runs, with one line
// that says which limit and where, when the workflow needs the skill
// (enabled: names it); TestRunSkipsBrokenSkill covers one it does not need.
func TestManifestLimits(t *testing.T) {
	t.Parallel()
	huge := "id: huge\nname: Huge\ndescription: Too big.\nversion: 1.0.0\ninstructions: |\n" +
		strings.Repeat("  "+strings.Repeat("x", 99)+"\n", 43_000)
	deep := "id: deep\nname: Deep\ndescription: Too deep.\nversion: 1.0.0\nmetadata: {x: " +
		strings.Repeat("[", 120) + strings.Repeat("]", 120) + "}\n"
	bomb := string(readAll(t, filepath.Join("..", "..", "spec", "testdata", "bad", "alias-bomb.skill.yaml")))
	// A 1 MiB string aliased 1,000 times in a tool's input: a 1 MiB file
	// naming a gigabyte of schema. The fifth alias, on line 16, passes
	// the bound.
	var aliased strings.Builder
	aliased.WriteString("id: limit\nname: Limit\ndescription: One string, many times.\nversion: 1.0.0\n" +
		"tools:\n  - name: big\n    run: {reply: ok}\n    input:\n      type: object\n" +
		"      description: &big " + strings.Repeat("x", 1<<20) + "\n      properties:\n")
	for i := range 1000 {
		fmt.Fprintf(&aliased, "        p%d: {type: string, description: *big}\n", i)
	}
	tasks := "limits: {max-total-tasks: 2, max-pending-tasks: 10}\ntasks:\n  - {id: a, goal: a}\n  - {id: b, goal: b}\n  - {id: c, goal: c}\n"
	for _, tc := range []struct {
		name, skill, extra, want string
	}{
		{"file size", huge, "", "limit.skill.yaml:1:1: file is 4386073 bytes, over the 4194304-byte (4 MiB) limit [limit]"},
		{"YAML depth", deep, "", "exceeded max depth of 100 [syntax]"},
		{"alias expansion", bomb, "", "aliases expand to more than 100000 nodes; an alias bomb? [yaml]"},
		{"aliased text", aliased.String(), "", "limit.skill.yaml:16:41: aliases repeat more than 4194304 bytes (4 MiB) of text"},
		{"static tasks", "", tasks, "3 static tasks exceed max-total-tasks (2) [limit]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			wf := filepath.Join(dir, "limit.workflow.yaml")
			enabled := ""
			if tc.skill != "" {
				// A skill that did not parse far enough to say its id is
				// known by its file name.
				enabled = "enabled: [limit]\n"
			}
			write(t, filepath.Join(dir, "limit.script.yaml"), "host: [{say: hi}]\n")
			write(t, wf, "name: limit\nmodel: scripted\nscript: limit.script.yaml\nskills: [./skills]\nhost: {prompt: hi}\ninput: go\n"+enabled+tc.extra)
			os.Mkdir(filepath.Join(dir, "skills"), 0o755)
			if tc.skill != "" {
				write(t, filepath.Join(dir, "skills", "limit.skill.yaml"), tc.skill)
			}
			code, _, errs := fsd(t, "run", wf, "--runs-dir", filepath.Join(dir, "runs"))
			if code != exitProblems || !strings.Contains(lastLine(errs), tc.want) || strings.Count(errs, "fsd: ") != 1 {
				t.Errorf("exit %d, stderr %q; want exit %d and one line containing %q", code, errs, exitProblems, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
				t.Error("a run started")
			}
		})
	}
}

func TestTimeoutFlagErrors(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "t.workflow.yaml")
	write(t, wf, "name: t\nmodel: scripted\nhost: {prompt: hi}\ninput: go\n")
	for _, tc := range []struct{ value, want string }{
		{"-1s", "--timeout: -1s is negative"},
		{"soon", `invalid argument "soon" for "--timeout"`},
	} {
		code, _, errs := fsd(t, "run", wf, "--timeout", tc.value)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("--timeout %s: exit %d, stderr %q; want exit %d and %q", tc.value, code, errs, exitUsage, tc.want)
		}
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The scripted model's script is checked as `fsd validate` checks it
// before a run reads it: a large answer aliased in one step's arguments
// (marshalled whole at the call) stops the run at the alias.
func TestRunChecksScript(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "s.workflow.yaml")
	write(t, wf, "name: s\nmodel: scripted\nscript: s.script.yaml\nhost: {prompt: hi}\ninput: go\n")
	write(t, filepath.Join(dir, "s.script.yaml"), "host:\n  - say: &big "+strings.Repeat("x", 1<<20)+
		"\n  - call: echo\n    args: {a: *big, b: *big, c: *big, d: *big, e: *big}\n")
	code, _, errs := fsd(t, "run", wf, "--runs-dir", filepath.Join(dir, "runs"))
	if want := "s.script.yaml:4:51: aliases repeat more than 4194304 bytes"; code != exitProblems || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %.300q; want exit %d and %q", code, errs, exitProblems, want)
	}
}
