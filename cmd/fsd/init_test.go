package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/golden"
	"github.com/fsdrun/fsd/scaffold"
)

// inTempDir moves the test into a fresh folder, as a new user's shell
// would be, and returns the absolute path of the package's testdata.
func inTempDir(t *testing.T) string {
	t.Helper()
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	return testdata
}

// fsd init prints what it wrote and the next three commands; each
// template's output is a golden file.
func TestInitOutput(t *testing.T) {
	testdata := inTempDir(t)
	for _, tmpl := range scaffold.Names {
		t.Run(tmpl, func(t *testing.T) {
			code, out, errs := fsd(t, "init", "my-"+tmpl, "--template", tmpl)
			if code != exitOK || errs != "" {
				t.Fatalf("exit %d: %s", code, errs)
			}
			golden.CheckString(t, filepath.Join(testdata, "init", tmpl+".golden"), out)
		})
	}
	code, out, _ := fsd(t, "init")
	if code != exitOK || !strings.Contains(out, "  fsd validate .\n  fsd context hello.workflow.yaml\n  fsd run hello.workflow.yaml\n") {
		t.Errorf("fsd init in the current folder: exit %d\n%s", code, out)
	}
}

// nextCommands are the commands after "Next:" in fsd init's output.
func nextCommands(t *testing.T, out string) [][]string {
	t.Helper()
	_, next, ok := strings.Cut(out, "\nNext:\n")
	if !ok {
		t.Fatalf("no Next: in\n%s", out)
	}
	var cmds [][]string
	for _, line := range strings.Split(strings.TrimSpace(next), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "fsd" {
			t.Fatalf("not an fsd command: %q", line)
		}
		cmds = append(cmds, f[1:])
	}
	return cmds
}

// The acceptance test: a new user runs fsd init and then the three
// commands it prints, with no API key and no network.
func TestInitThenItsThreeCommands(t *testing.T) {
	inTempDir(t)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	for _, tmpl := range scaffold.Names {
		t.Run(tmpl, func(t *testing.T) {
			code, out, errs := fsd(t, "init", "p-"+tmpl, "-t", tmpl)
			if code != exitOK {
				t.Fatalf("init: exit %d: %s", code, errs)
			}
			cmds := nextCommands(t, out)
			if len(cmds) != 3 {
				t.Fatalf("%d commands, want 3", len(cmds))
			}
			for _, args := range cmds {
				code, out, errs := fsd(t, args...)
				if code != exitOK {
					t.Fatalf("fsd %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
				}
				if args[0] == "validate" {
					if !strings.Contains(errs, " 0 errors, 0 warnings") {
						t.Errorf("fsd %s: %s", strings.Join(args, " "), errs)
					}
				} else if strings.TrimSpace(out) == "" {
					t.Errorf("fsd %s printed nothing on stdout", strings.Join(args, " "))
				}
				if strings.Contains(errs, "warning:") || strings.Contains(errs, "refused") {
					t.Errorf("fsd %s: %s", strings.Join(args, " "), errs)
				}
			}
			// Every tool call of the scripted run succeeds: the template
			// shows the happy path, not a refusal.
			wf := cmds[2][len(cmds[2])-1]
			_, out, _ = fsd(t, "run", wf, "--events", "json")
			for _, e := range events(t, out) {
				if e.Error || e.Type == "skill.skipped" {
					t.Errorf("%s: %s %s %s", wf, e.Type, e.Tool, e.Result)
				}
			}
		})
	}
}

func TestInitModelines(t *testing.T) {
	inTempDir(t)
	for _, tmpl := range scaffold.Names {
		if code, _, errs := fsd(t, "init", tmpl, "-t", tmpl); code != exitOK {
			t.Fatalf("%s: %s", tmpl, errs)
		}
		files, _ := scaffold.Files(tmpl)
		for _, f := range files {
			want := ""
			switch {
			case strings.HasSuffix(f, ".workflow.yaml"):
				want = "# yaml-language-server: $schema=https://raw.githubusercontent.com/fsdrun/fsd/main/schemas/workflow.schema.json\n"
			case strings.HasSuffix(f, ".skill.yaml"):
				want = "# yaml-language-server: $schema=https://raw.githubusercontent.com/fsdrun/fsd/main/schemas/skill.schema.json\n"
			default:
				continue
			}
			data, err := os.ReadFile(filepath.Join(tmpl, f))
			if err != nil || !strings.HasPrefix(string(data), want) {
				t.Errorf("%s/%s does not start with the modeline %q (%v)", tmpl, f, want, err)
			}
		}
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	inTempDir(t)
	if code, _, errs := fsd(t, "init", "p"); code != exitOK {
		t.Fatal(errs)
	}
	// The user edits one file and deletes another; a second init touches
	// neither: it writes nothing at all.
	edited := filepath.Join("p", "hello.workflow.yaml")
	if err := os.WriteFile(edited, []byte("name: mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deleted := filepath.Join("p", "hello.script.yaml")
	if err := os.Remove(deleted); err != nil {
		t.Fatal(err)
	}
	code, out, errs := fsd(t, "init", "p")
	want := "fsd: p/hello.workflow.yaml and 1 more files already exist; nothing was written (fsd init never overwrites: pick a new folder, e.g. fsd init my-project)\n"
	if code != exitProblems || out != "" || errs != want {
		t.Errorf("exit %d, stdout %q\nstderr %q\nwant   %q", code, out, errs, want)
	}
	if data, _ := os.ReadFile(edited); string(data) != "name: mine\n" {
		t.Errorf("the edited file was overwritten: %q", data)
	}
	if _, err := os.Stat(deleted); !os.IsNotExist(err) {
		t.Errorf("init wrote %s although it refused", deleted)
	}
}

func TestInitUsage(t *testing.T) {
	inTempDir(t)
	if err := os.WriteFile("file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"init", "--template", "webapp"}, exitUsage, "fsd: unknown --template \"webapp\"; want hello, pipeline, agent-skills\n"},
		{[]string{"init", "a", "b"}, exitUsage, "fsd: init takes [DIR]; got 2: a b (see fsd init --help)\n"},
		{[]string{"init", "file"}, exitProblems, "fsd: file is a file, not a folder\n"},
	}
	for _, tt := range tests {
		code, out, errs := fsd(t, tt.args...)
		if code != tt.code || errs != tt.want || out != "" {
			t.Errorf("fsd %v: exit %d, stdout %q\nstderr %q\nwant   %q", tt.args, code, out, errs, tt.want)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != 1 {
		t.Errorf("a refused init left files: %v", entries)
	}
}
