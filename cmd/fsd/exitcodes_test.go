package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The exit-code table (docs/cli.md) lists exactly the codes fsd uses, and each
// code means what the table says (signals: TestSignalsInterrupt).
func TestExitCodeTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Exit codes\n")
	if !ok {
		t.Fatal("docs/cli.md has no exit-code table")
	}
	row := regexp.MustCompile(`(?m)^\| (\d+) \|`)
	var documented []int
	for _, m := range row.FindAllStringSubmatch(strings.SplitN(table, "\n\n", 2)[0], -1) {
		n, _ := strconv.Atoi(m[1])
		documented = append(documented, n)
	}
	used := []int{exitOK, exitProblems, exitUsage, exitInternal, exitWaiting,
		signalExit(syscall.SIGINT), signalExit(syscall.SIGTERM), signalExit(syscall.SIGHUP)}
	sort.Ints(documented)
	sort.Ints(used)
	if stringify(documented) != stringify(used) {
		t.Errorf("docs/cli.md documents exit codes %v, fsd uses %v", documented, used)
	}

	// A record with a bad seed is a problem with the record, not with fsd.
	runs := t.TempDir()
	bad := filepath.Join(runs, "bad")
	os.MkdirAll(bad, 0o755)
	write(t, filepath.Join(bad, "run.json"), `{"id":"bad","status":"failed","seed":"zz","workflow":"x.workflow.yaml"}`)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"valid", []string{"validate", "../../examples/hello"}, exitOK},
		{"invalid", []string{"validate", "../../spec/testdata/bad/bad-run.skill.yaml"}, exitProblems},
		{"bad seed", []string{"resume", "bad", "--runs-dir", runs}, exitProblems},
		{"no such run", []string{"resume", "nope", "--runs-dir", runs}, exitUsage},
		{"show no such run", []string{"show", "nope", "--runs-dir", runs}, exitUsage},
		{"report no such run", []string{"report", "nope", "-o", "-", "--runs-dir", runs}, exitUsage},
		{"runs show no such run", []string{"runs", "show", "nope", "--runs-dir", runs}, exitUsage},
		{"unknown flag", []string{"run", "--bogus"}, exitUsage},
		{"unknown command", []string{"frobnicate"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := fsd(t, tc.args...)
			if code != tc.code {
				t.Errorf("fsd %s: exit %d, want %d: %s", strings.Join(tc.args, " "), code, tc.code, errs)
			}
			if code != exitOK && strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", errs)
			}
		})
	}
}

func stringify(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, strconv.Itoa(n))
	}
	return "[" + strings.Join(s, " ") + "]"
}
