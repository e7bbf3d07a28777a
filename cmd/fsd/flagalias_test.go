package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The old spellings — fsd runs show, --json, --record — do what the
// canonical ones do, byte for byte, so scripts written with them keep
// working.
func TestOldSpellingsWork(t *testing.T) {
	t.Parallel()
	runs := recordExample(t, "../../examples/hello/hello.workflow.yaml", "hello")
	fakeRun(t, runs, "20261120-100000-bbbb2222", "failed", 0, time.Hour, "")
	for _, tc := range []struct {
		name     string
		old, now []string
	}{
		{"runs show", []string{"runs", "show", "hello"}, []string{"show", "hello"}},
		{"runs show --json", []string{"runs", "show", "hello", "--json"}, []string{"show", "hello", "--format", "json"}},
		{"show --json", []string{"show", "hello", "--json"}, []string{"show", "hello", "--format", "json"}},
		{"runs show --requests", []string{"runs", "show", "hello", "--requests"}, []string{"show", "hello", "--requests"}},
		{"runs show --task", []string{"runs", "show", "hello", "--task", "note", "--json"}, []string{"show", "hello", "--requests", "--task", "note", "--format", "json"}},
		{"show --step", []string{"show", "hello", "--step", "1"}, []string{"show", "hello", "--requests", "--step", "1"}},
		{"runs --json", []string{"runs", "--json"}, []string{"runs", "--format", "json"}},
		{"--json=false", []string{"runs", "--json=false"}, []string{"runs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, want, errs := fsd(t, append(tc.now, "--runs-dir", runs)...)
			if code != exitOK || want == "" {
				t.Fatalf("%v: exit %d: %s", tc.now, code, errs)
			}
			code, got, errs := fsd(t, append(tc.old, "--runs-dir", runs)...)
			if code != exitOK || got != want {
				t.Errorf("%v: exit %d: %s\n%s\nwant, as %v prints:\n%s", tc.old, code, errs, got, tc.now, want)
			}
		})
	}

	// The summary and the requests are different levels.
	_, summary, _ := fsd(t, "show", "hello", "--runs-dir", runs)
	_, requests, _ := fsd(t, "show", "hello", "--runs-dir", runs, "--requests")
	if !strings.Contains(summary, "\ntasks (1)\n") || strings.Contains(summary, "=== step 1") || !strings.Contains(requests, "=== step 1 · request") {
		t.Errorf("summary:\n%s\nrequests:\n%.300s", summary, requests)
	}

	// --record writes the cassette --record-cassette writes, which replays.
	dir := t.TempDir()
	wf := "../../examples/hello/hello.workflow.yaml"
	for _, flag := range []string{"--record", "--record-cassette"} {
		tape := filepath.Join(dir, strings.TrimLeft(flag, "-")+".jsonl")
		if code, _, errs := fsd(t, "run", wf, "--runs-dir", dir, flag, tape); code != exitOK {
			t.Fatalf("run %s: exit %d: %s", flag, code, errs)
		}
		if b, _ := os.ReadFile(tape); !strings.HasPrefix(string(b), `{"fsd_recording":1`) || strings.Count(string(b), "\n") < 3 {
			t.Errorf("%s wrote:\n%s", flag, b)
		}
		if code, _, errs := fsd(t, "run", wf, "--runs-dir", dir, "--replay", tape); code != exitOK {
			t.Errorf("replay of %s: exit %d: %s", flag, code, errs)
		}
	}
	code, _, errs := fsd(t, "run", wf, "--runs-dir", dir, "--record", "x.jsonl", "--replay", "y.jsonl")
	if code != exitUsage || !strings.Contains(errs, "--record-cassette and --replay cannot be used together") {
		t.Errorf("--record with --replay: exit %d: %s", code, errs)
	}
}

// Help teaches one spelling: the old ones are in no help text, and every
// command that formats its result for a machine takes --format.
func TestOldSpellingsHidden(t *testing.T) {
	for _, args := range [][]string{{"runs"}, {"show"}, {"run"}, {"validate"}, {"graph"}} {
		_, out, _ := fsd(t, append(args, "--help")...)
		for _, old := range []string{"--json", "--record ", "same as --", "\n  show "} {
			if strings.Contains(out, old) {
				t.Errorf("fsd %s --help shows %q:\n%s", args[0], old, out)
			}
		}
	}
	for _, args := range [][]string{{"runs"}, {"show"}, {"validate"}} {
		if _, out, _ := fsd(t, append(args, "--help")...); !strings.Contains(out, "--format") {
			t.Errorf("fsd %s --help has no --format:\n%s", args[0], out)
		}
	}
	_, out, _ := fsd(t, "--help")
	if !strings.Contains(out, "\n  show ") {
		t.Errorf("fsd --help does not list show:\n%s", out)
	}
}
