package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// fsdIn runs the CLI in-process with stdin.
func fsdIn(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runIO(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// userMessage is the user message fsd context shows for the hello example.
func userMessage(t *testing.T, out string) string {
	t.Helper()
	_, after, ok := strings.Cut(out, "--- user (")
	if !ok {
		t.Fatalf("no user message in:\n%s", out)
	}
	_, msg, _ := strings.Cut(after, "\n")
	msg, _, _ = strings.Cut(msg, "\n=== tools")
	return msg
}

func TestInputFromStdinAndFile(t *testing.T) {
	wf := "../../examples/hello/hello.workflow.yaml"
	file := filepath.Join(t.TempDir(), "msg.txt")
	if err := os.WriteFile(file, []byte("Welcome Grace,\nwho starts Monday.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, stdin, input, want string
	}{
		{"stdin", "Welcome Bob.\n", "-", "Welcome Bob."},
		{"file", "", "@" + file, "Welcome Grace,\nwho starts Monday."},
		{"literal at", "", "@@team welcome", "@team welcome"},
		{"plain", "", "Welcome Eve.", "Welcome Eve."},
		{"default", "", "", "Welcome Ada to the team."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"context", wf}
			if tt.input != "" {
				args = append(args, "-i", tt.input)
			}
			code, out, errs := fsdIn(t, tt.stdin, args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if got := userMessage(t, out); got != tt.want {
				t.Errorf("user message %q, want %q", got, tt.want)
			}
		})
	}
	// fsd run reads it the same way: the message reaches the run record.
	runs := t.TempDir()
	code, _, errs := fsdIn(t, "From stdin.\n", "run", wf, "-i", "-", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("run -i -: exit %d: %s", code, errs)
	}
	dirs, _ := os.ReadDir(runs)
	if len(dirs) != 1 {
		t.Fatalf("%d run records", len(dirs))
	}
	tr, _ := os.ReadFile(filepath.Join(runs, dirs[0].Name(), "journal.jsonl"))
	if !strings.Contains(string(tr), `"From stdin."`) || strings.Contains(string(tr), `"text":"-"`) {
		t.Errorf("the transcript does not start with the stdin message:\n%s", tr)
	}
}

func TestInputErrors(t *testing.T) {
	t.Parallel()
	wf := "../../examples/hello/hello.workflow.yaml"
	tests := []struct {
		name, stdin, input, want string
	}{
		{"empty stdin", "", "-", "fsd: -i -: stdin is empty; give the message, or leave out -i to use the workflow's input\n"},
		{"missing file", "", "@no-such.txt", "fsd: -i @no-such.txt: no such file or folder (to send text that starts with @, write @@)\n"},
		{"too big", strings.Repeat("x", maxInputBytes+1), "-", "fsd: -i -: stdin is over the 4194304-byte (4 MiB) limit\n"},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"run", "context"} {
			t.Run(tt.name+"/"+cmd, func(t *testing.T) {
				code, out, errs := fsdIn(t, tt.stdin, cmd, wf, "-i", tt.input, "--runs-dir", t.TempDir())
				if cmd == "context" {
					code, out, errs = fsdIn(t, tt.stdin, cmd, wf, "-i", tt.input)
				}
				if code != exitUsage || errs != tt.want || out != "" {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errs, tt.want)
				}
			})
		}
	}
}

func TestWorkflowArgument(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one")
	copyDir(t, "../../examples/hello", one)
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	// A run record holds a copy of its workflow; it is not a candidate.
	if err := os.MkdirAll(filepath.Join(one, ".fsd", "runs", "r1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(one, ".fsd", "runs", "r1", "workflow.yaml"), []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A folder with one workflow runs it.
	code, out, errs := fsd(t, "run", one, "--runs-dir", t.TempDir())
	if code != exitOK || !strings.Contains(out, "Ada is welcomed") {
		t.Fatalf("run FOLDER: exit %d, %q, %q", code, out, errs)
	}
	if code, out, errs := fsd(t, "graph", one); code != exitOK || !strings.Contains(out, "flowchart") && !strings.Contains(out, "graph") {
		t.Errorf("graph FOLDER: exit %d, %q, %q", code, out, errs)
	}

	for _, cmd := range []string{"run", "context", "graph"} {
		tests := []struct{ arg, want string }{
			{filepath.Join(dir, "nope.yaml"), "fsd: " + filepath.Join(dir, "nope.yaml") + ": no such file or folder\n"},
			{empty, "fsd: " + empty + " is a folder with no workflow in it (*.workflow.yaml or workflow.yaml); name a workflow file, or start one with fsd init " + empty + "\n"},
			{"../../examples", "fsd: ../../examples holds 9 workflows; name one: ../../examples/conversation.workflow.yaml, ../../examples/evals/evals.workflow.yaml, ../../examples/fanout/fanout.workflow.yaml, ../../examples/hello/hello.workflow.yaml, ../../examples/lifecycle/lifecycle.workflow.yaml and 4 more\n"},
		}
		for _, tt := range tests {
			code, out, errs := fsd(t, cmd, tt.arg)
			if code != exitUsage || errs != tt.want || out != "" {
				t.Errorf("fsd %s %s: exit %d, stdout %q\nstderr %q\nwant   %q", cmd, tt.arg, code, out, errs, tt.want)
			}
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestColor(t *testing.T) {
	decide := func(args ...string) bool {
		t.Helper()
		var got bool
		root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
		probe := &cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) error {
			got = useColor(cmd, cmd.ErrOrStderr())
			return nil
		}}
		root.AddCommand(probe)
		root.SetArgs(append([]string{"probe"}, args...))
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	if decide() {
		t.Error("auto coloured a buffer, which is no terminal")
	}
	if decide("--color", "never") {
		t.Error("--color never coloured")
	}
	if !decide("--color", "always") {
		t.Error("--color always did not colour a pipe")
	}
	// The -v logger writes escape codes only when told to.
	var plain, coloured bytes.Buffer
	lp, lc := consoleLogger(&plain, false), consoleLogger(&coloured, true)
	lp.Warn().Str("k", "v").Msg("hello")
	lc.Warn().Str("k", "v").Msg("hello")
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(coloured.String(), "\x1b[") {
		t.Errorf("plain %q, coloured %q", plain.String(), coloured.String())
	}

	t.Setenv("NO_COLOR", "1")
	if decide("--color=always") {
		t.Error("NO_COLOR did not turn colour off")
	}

	code, _, errs := fsd(t, "--color", "sometimes", "version")
	if code != exitUsage || errs != "fsd: invalid argument \"sometimes\" for \"--color\" flag: want auto, always or never, not \"sometimes\"\n" {
		t.Errorf("bad --color: exit %d, %q", code, errs)
	}
}

// -v into a pipe or file carries no escape codes: the whole stderr of a
// verbose run is plain text.
func TestVerboseRunIsPlainInPipes(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	code, _, errs := fsd(t, "run", "../../examples/hello/hello.workflow.yaml", "-v", "--runs-dir", t.TempDir())
	if code != exitOK || strings.Contains(errs, "\x1b") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}
