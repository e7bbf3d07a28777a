package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/testlong"
)

var (
	killRuns = flag.Int("kill.runs", 0, "how many seeded kill-and-resume trials TestKillAnywhere runs (0: 4, or 30 with FSD_LONG_TESTS=1)")
	killSeed = flag.Uint64("kill.seed", 1, "seed of TestKillAnywhere's kill moments (a trial's seed is this plus its number)")
)

// killTool is the kill test's command tool, a shell script (cheap to
// start, so many trials stay fast under -race): `tool.sh MODE DIR ID`. It
// takes a moment (so a kill lands while it runs), notes if it outlived
// fsd (its parent changed: it was reparented), then does its effect:
//
//   - dedupe: creates DIR/dedupe/<FSD_CALL_ID> unless it exists, the way
//     a tool makes itself idempotent on the call id;
//   - plain: appends FSD_CALL_ID to DIR/plain.log, every time it runs.
const killTool = `#!/bin/sh
mode=$1 dir=$2 id=$3
if [ -z "$FSD_CALL_ID" ] || [ -z "$FSD_RUN_ID" ]; then echo "no FSD_CALL_ID or FSD_RUN_ID" >&2; exit 1; fi
read -r _ _ _ parent _ < /proc/$$/stat
sleep 0.04
read -r _ _ _ now _ < /proc/$$/stat
if [ "$now" != "$parent" ]; then echo "$FSD_CALL_ID" >> "$dir/orphans.log"; fi
case $mode in
dedupe) key=$(printf %s "$FSD_CALL_ID" | tr '/:' '+='); (set -C; : > "$dir/dedupe/$key") 2>/dev/null ;;
plain) echo "$FSD_CALL_ID" >> "$dir/plain.log" ;;
*) exit 2 ;;
esac
printf '%s %s' "$mode" "$id"
`

// killWorkflow writes a skill with a dedupe and a plain command tool and
// either a pipeline (four tasks, two at a time) or a host conversation
// that calls the tools itself and delegates two tasks.
func killWorkflow(t *testing.T, dir string, conversation bool) string {
	t.Helper()
	skill := filepath.Join(dir, "skills", "steps")
	for _, d := range []string{skill, filepath.Join(dir, "effects", "dedupe")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(skill, "tool.sh"), []byte(killTool), 0o755); err != nil {
		t.Fatal(err)
	}
	effects := filepath.Join(dir, "effects")
	tool := func(mode string) string {
		return fmt.Sprintf(`  - name: %s
    description: Does the %s side effect.
    input: {type: object, properties: {id: {type: string}}, required: [id]}
    run: {command: [./tool.sh, %s, %q, "{{.id}}"]}
`, mode, mode, mode, effects)
	}
	write(t, filepath.Join(skill, "steps.skill.yaml"), `id: steps
name: Steps
description: Side effects for the kill test.
version: 1.0.0
instructions: Do your step.
tools:
`+tool("dedupe")+tool("plain")+`agents:
  stepper:
    prompt: Do your step.
    tools: [dedupe, plain]
`)
	agents := `agents:
  stepper:
    - calls:
        - {call: dedupe, args: {id: '{{.Task.ID}}'}}
        - {call: plain, args: {id: '{{.Task.ID}}'}}
    - call: dedupe
      args: {id: '{{.Task.ID}}-again'}
    - say: '{{.Task.ID}} did {{.Last}}'
`
	wf := filepath.Join(dir, "kill.workflow.yaml")
	if !conversation {
		write(t, filepath.Join(dir, "kill.script.yaml"), agents)
		write(t, wf, `name: kill
model: scripted
script: kill.script.yaml
skills: [./skills]
limits: {concurrency: 2}
tasks:
  - {id: a, assignee: steps/stepper, goal: first}
  - {id: b, assignee: steps/stepper, goal: second}
  - {id: c, assignee: steps/stepper, goal: third, deps: [a]}
  - {id: d, assignee: steps/stepper, goal: fourth, deps: [a, b]}
input: go
`)
		return wf
	}
	write(t, filepath.Join(dir, "kill.script.yaml"), `host:
  - call: read_skill
    args: {id: steps}
  - calls:
      - {call: dedupe, args: {id: host}}
      - {call: plain, args: {id: host}}
  - calls:
      - {call: addTask, args: {id: t1, goal: one, assignee: stepper}}
      - {call: addTask, args: {id: t2, goal: two, assignee: stepper}}
  - call: runBoard
  - call: plain
    args: {id: host-end}
  - say: 'all done: {{.Last}}'
`+agents)
	write(t, wf, `name: kill
model: scripted
script: kill.script.yaml
skills: [./skills]
limits: {concurrency: 2}
host: {prompt: You delegate.}
input: go
`)
	return wf
}

// fsdProc runs the test binary as fsd.
func fsdProc(args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode() // -1 when a signal killed it
	}
	if err != nil {
		return -2
	}
	return 0
}

// effects is what the tools did: per call id, how many times.
type effects struct {
	dedupe map[string]int
	plain  map[string]int
}

func readEffects(t *testing.T, dir string) effects {
	t.Helper()
	e := effects{dedupe: map[string]int{}, plain: map[string]int{}}
	files, err := os.ReadDir(filepath.Join(dir, "effects", "dedupe"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		e.dedupe[f.Name()]++
	}
	b, _ := os.ReadFile(filepath.Join(dir, "effects", "plain.log"))
	for _, line := range strings.Fields(string(b)) {
		e.plain[line]++
	}
	return e
}

// toolsOf lists the live processes whose environment holds FSD_RUN_ID=id
// (Linux: /proc). A zombie's environment reads empty.
func toolsOf(id string) []string {
	want := []byte("FSD_RUN_ID=" + id + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var out []string
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, want) {
			out = append(out, p)
		}
	}
	return out
}

// noToolOutlives waits, bounded, until no tool process of run id is left.
func noToolOutlives(t *testing.T, id, when string) {
	t.Helper()
	var left []string
	for range 300 {
		if left = toolsOf(id); len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%s: tool processes outlived fsd: %v", when, left)
}

// checkRecord parses every line of every record file.
func checkRecord(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch filepath.Ext(path) {
		case ".jsonl":
			if len(b) > 0 && b[len(b)-1] != '\n' {
				t.Errorf("%s does not end in a newline", path)
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 16<<20)
			for n := 1; sc.Scan(); n++ {
				if !json.Valid(sc.Bytes()) {
					t.Errorf("%s:%d does not parse: %.120s", path, n, sc.Bytes())
				}
			}
		case ".json":
			if !json.Valid(b) {
				t.Errorf("%s does not parse", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

var inDoubtLine = regexp.MustCompile(`running an in-doubt call again.*call=(\S+)`)

// killCounts are the totals TestKillAnywhere reports.
type killCounts struct {
	trials, kills, resumes, inDoubt, plainDuplicates, dedupeDuplicates atomic.Int64
}

// TestKillAnywhere kills fsd — a pipeline of slow command tools, or a host
// conversation that delegates, under either --durability — at seeded
// random moments, with SIGKILL or
// SIGTERM, resumes it (killing some resumes too) until it answers, and
// checks: the answer equals an uninterrupted run's; every record line
// parses; the tool that dedupes on FSD_CALL_ID did each call's effect
// exactly once; the plain tool did each at most once more per in-doubt
// re-run of that call; no tool process outlived a killed fsd.
// Four trials by default (each kind of run in each durability mode), 30
// with FSD_LONG_TESTS=1; -kill.runs=300 for more, -kill.seed=N for other
// moments.
func TestKillAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fsd as a subprocess many times")
	}
	if runtime.GOOS != "linux" {
		t.Skip("checks for stray tool processes through /proc")
	}
	t.Parallel()
	type clean struct {
		answer  string
		took    time.Duration
		effects effects
	}
	var cleans [2]clean
	for i, conv := range []bool{false, true} {
		dir := t.TempDir()
		wf := killWorkflow(t, dir, conv)
		cmd, out, errb := fsdProc("run", wf, "--runs-dir", filepath.Join(dir, "runs"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		start := waitStarted(filepath.Join(dir, "runs"), done)
		if err := <-done; err != nil {
			t.Fatalf("uninterrupted run: %v: %s", err, errb)
		}
		// How long the run works once its record began: kill moments are
		// drawn from it, so process start-up (slow under -race) does not
		// eat the trials.
		cleans[i] = clean{answer: out.String(), took: time.Since(start), effects: readEffects(t, dir)}
		for id, n := range cleans[i].effects.plain {
			if n != 1 {
				t.Fatalf("uninterrupted run did %s %d times", id, n)
			}
		}
	}
	var counts killCounts
	t.Cleanup(func() {
		t.Logf("%d trials, %d kills, %d resumes, %d in-doubt calls run again, %d plain duplicates, %d dedupe duplicates",
			counts.trials.Load(), counts.kills.Load(), counts.resumes.Load(), counts.inDoubt.Load(),
			counts.plainDuplicates.Load(), counts.dedupeDuplicates.Load())
	})
	runs := *killRuns
	if runs == 0 {
		runs = testlong.Runs(4, 30)
	}
	for trial := range runs {
		seed := *killSeed + uint64(trial)
		conv := trial%2 == 1
		want := cleans[trial%2]
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			// Trials alternate pipeline and conversation, and in pairs the
			// durability mode: effects keep their guarantees in both.
			durability := []string{"step", "commit-before-effects"}[trial/2%2]
			killTrial(t, seed, conv, durability, want.answer, want.took, want.effects, &counts)
		})
	}
}

func killTrial(t *testing.T, seed uint64, conv bool, durability, want string, took time.Duration, clean effects, counts *killCounts) {
	rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))
	dir := t.TempDir()
	wf := killWorkflow(t, dir, conv)
	runs := filepath.Join(dir, "runs")
	counts.trials.Add(1)
	// Kill somewhere in the run (a little past its clean duration too:
	// some runs finish first).
	moment := func() time.Duration { return time.Duration(rng.Int64N(int64(took) * 6 / 5)) }

	// runUntil starts args, kills it at a random moment after its run
	// started with SIGKILL (or, one time in four, SIGTERM), and returns
	// what it printed.
	runUntil := func(args ...string) (code int, stdout, stderr string, sig syscall.Signal) {
		cmd, out, errb := fsdProc(args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sig = syscall.SIGKILL
		if rng.IntN(4) == 0 {
			sig = syscall.SIGTERM
		}
		wait := moment()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		waitStarted(runs, done)
		timer := time.AfterFunc(wait, func() { _ = cmd.Process.Signal(sig) })
		err := <-done
		timer.Stop()
		counts.kills.Add(1)
		return exitCode(err), out.String(), errb.String(), sig
	}
	runID := func() string {
		ids, _ := os.ReadDir(runs)
		if len(ids) != 1 {
			return ""
		}
		return ids[0].Name()
	}

	code, answer, stderr, sig := runUntil("run", wf, "--runs-dir", runs, "--durability", durability)
	id := runID()
	if id != "" {
		noToolOutlives(t, id, "after the kill of fsd run")
	}
	if sig == syscall.SIGTERM && code == 143 {
		if !strings.Contains(stderr, "fsd resume "+id) {
			t.Errorf("SIGTERM: stderr has no resume hint: %s", stderr)
		}
		if sum := string(readAll(t, filepath.Join(runs, id, "run.json"))); !strings.Contains(sum, `"status": "interrupted"`) {
			t.Errorf("SIGTERM: run.json:\n%s", sum)
		}
	}
	if code != 0 && (id == "" || !exists(filepath.Join(runs, id, "run.json"))) {
		// Killed before the record began: nothing ran, start over.
		os.RemoveAll(runs)
		cmd, out, errb := fsdProc("run", wf, "--runs-dir", runs, "--durability", durability)
		if err := cmd.Run(); err != nil {
			t.Fatalf("run again: %v: %s", err, errb)
		}
		code, answer, id = 0, out.String(), runID()
	}
	resumes := map[string]int{} // call id -> in-doubt re-runs
	noteInDoubt := func(stderr string) {
		for _, m := range inDoubtLine.FindAllStringSubmatch(stderr, -1) {
			resumes[m[1]]++
			counts.inDoubt.Add(1)
		}
	}
	for attempt := 0; code != 0; attempt++ {
		if attempt == 6 {
			t.Fatalf("no answer after %d resumes", attempt)
		}
		counts.resumes.Add(1)
		args := []string{"resume", id, "--runs-dir", runs, "--durability", durability}
		if attempt == 0 && rng.IntN(3) == 0 {
			// Kill the resume too.
			code, answer, stderr, _ = runUntil(args...)
			noToolOutlives(t, id, "after the kill of fsd resume")
		} else {
			cmd, out, errb := fsdProc(args...)
			code, answer, stderr = exitCode(cmd.Run()), out.String(), errb.String()
		}
		noteInDoubt(stderr)
		if code == exitProblems && strings.Contains(stderr, "already finished") {
			// It finished but was killed before printing the answer.
			var sum struct{ Answer string }
			if err := json.Unmarshal(readAll(t, filepath.Join(runs, id, "run.json")), &sum); err != nil {
				t.Fatal(err)
			}
			code, answer = 0, sum.Answer+"\n"
		} else if code != 0 && code != -1 && code != 143 {
			t.Fatalf("resume: exit %d: %s", code, stderr)
		}
	}
	if answer != want {
		t.Errorf("answer %q, uninterrupted %q", answer, want)
	}
	checkRecord(t, filepath.Join(runs, id))
	if b, _ := os.ReadFile(filepath.Join(dir, "effects", "orphans.log")); len(b) > 0 {
		t.Errorf("tool processes outlived fsd and went on running: %q", b)
	}
	got := readEffects(t, dir)
	if !sameKeys(got.dedupe, clean.dedupe) {
		t.Errorf("dedupe effects %v, uninterrupted %v", keys(got.dedupe), keys(clean.dedupe))
	}
	if !sameKeys(got.plain, clean.plain) {
		t.Errorf("plain effects %v, uninterrupted %v", keys(got.plain), keys(clean.plain))
	}
	for call, n := range got.plain {
		if n > 1+resumes[call] {
			t.Errorf("plain tool ran %s %d times, but it was in doubt only %d times", call, n, resumes[call])
		}
		counts.plainDuplicates.Add(int64(n - 1))
	}
	for _, n := range got.dedupe {
		counts.dedupeDuplicates.Add(int64(n - 1)) // always 0: a file per call id
	}
}

// waitStarted waits until a run under runs has emitted run.started (a
// resume emits it again, after the run.started already there: it then
// returns at once), or the process is done; it returns when.
func waitStarted(runs string, done chan error) time.Time {
	for {
		select {
		case err := <-done:
			done <- err // for the caller's receive
			return time.Now()
		default:
		}
		evs, _ := filepath.Glob(filepath.Join(runs, "*", "events.jsonl"))
		for _, f := range evs {
			if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(`"run.started"`)) {
				return time.Now()
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func keys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sameKeys(a, b map[string]int) bool {
	return strings.Join(keys(a), ",") == strings.Join(keys(b), ",")
}
