package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// What a user can get wrong on fsd eval's command line is refused before
// any run, and a file with nothing to measure does not pass as a success.
func TestEvalRefusesBadInput(t *testing.T) {
	dir := evalProject(t)
	wf := filepath.Join(dir, "wf.workflow.yaml")
	runs := filepath.Join(dir, ".fsd", "runs")
	set := filepath.Join(dir, "skills", "greeter", "trigger.json")
	write(t, set, `[{"query": "say hello to Ada", "should_trigger": true}]`)
	empty := filepath.Join(dir, "skills", "greeter", "empty.json")
	write(t, empty, `[]`)
	blank := filepath.Join(dir, "skills", "greeter", "blank.json")
	write(t, blank, `[{"query": "", "should_trigger": true}]`)
	noCases := filepath.Join(dir, "none.eval.yaml")
	write(t, noCases, "workflow: wf.workflow.yaml\n")
	common := []string{"--workflow", wf, "--model", "standin", "--runs-dir", runs, "--repeat", "1"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"threshold NaN", []string{set, "--threshold", "NaN"}, exitUsage, "--threshold NaN"},
		{"threshold above 1", []string{set, "--threshold", "1.5"}, exitUsage, "--threshold 1.5"},
		{"unknown --skill", []string{set, "--skill", "nope"}, exitUsage, `skill "nope" is not in the workflow's catalog`},
		{"empty trigger set", []string{empty}, exitProblems, "nothing to measure: " + empty + " holds no trigger queries"},
		{"suite without cases", []string{noCases}, exitProblems, "nothing to measure"},
		{"two empty files", []string{empty, noCases}, exitProblems, noCases + " hold no trigger queries"},
		{"empty query", []string{blank}, exitProblems, "blank.json:1:12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := fsd(t, append(append([]string{"eval"}, tc.args...), common...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("exit %d, stderr %q; want %d and one line with %q\n%s", code, errOut, tc.code, tc.want, out)
			}
		})
	}
	// --repeat 0 asks for no runs: refused, not read as "the default".
	if code, _, errOut := fsd(t, "eval", set, "--workflow", wf, "--model", "standin", "--runs-dir", runs, "--repeat", "0"); code != exitUsage || !strings.Contains(errOut, "--repeat 0") {
		t.Errorf("--repeat 0: exit %d, stderr %q; want %d naming --repeat 0", code, errOut, exitUsage)
	}
	// A trigger set saved with a byte-order mark is still a trigger set.
	write(t, set, "\ufeff"+`[{"query": "say hello to Ada", "should_trigger": true}]`)
	if code, out, errOut := fsd(t, append([]string{"eval", set}, common...)...); code != exitOK || !strings.Contains(out, "greeter/1") {
		t.Errorf("a trigger set with a BOM: exit %d, stderr %q\n%s", code, errOut, out)
	}
}
