package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tokens"
)

// fixture is a workspace with a few files, a folder beside it that is not
// the workspace (a secret there), a skill folder read-only to the reading
// tools, and symlinks out of the workspace.
type fixture struct {
	ws           *Workspace
	dir, outside string
	skill        string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"), skill: filepath.Join(base, "skill")}
	files := map[string]string{
		"ws/notes.txt":          "alpha\nbeta\ngamma\nbeta\n",
		"ws/src/main.go":        "package main\n\nfunc main() {}\n",
		"ws/src/util/util.go":   "package util\n\n// Beta helps.\nfunc Beta() {}\n",
		"ws/docs/readme.md":     "# Title\nSee beta.\n",
		"ws/.git/config":        "beta in git\n",
		"outside/secret.txt":    "top secret\n",
		"skill/SKILL.md":        "---\nname: s\n---\nUse beta.\n",
		"skill/scripts/x.py":    "print('beta')\n",
		"ws/one.txt":            "only one line",
		"ws/empty.txt":          "",
		"ws/latin1.txt":         "caf\xe9 au lait\n",
		"ws/picture.png":        "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"ws/dup.txt":            "x = 1\nx = 1\n",
		"ws/deep/a/b/c/leaf.md": "leaf beta\n",
	}
	for name, content := range files {
		p := filepath.Join(base, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"ws/out-link":        f.outside,
		"ws/secret-link.txt": filepath.Join(f.outside, "secret.txt"),
		"ws/in-link.txt":     "notes.txt",
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	f.ws = ws
	return f
}

// call calls the built-in name with args in the fixture.
func (f fixture) call(t *testing.T, name, args string) (string, bool) {
	t.Helper()
	tl, err := NewTool(name, f.ws, func() []string { return []string{f.skill} })
	if err != nil {
		t.Fatal(err)
	}
	res := tl.Call(context.Background(), json.RawMessage(args))
	return res.Text, res.IsError
}

type toolCase struct {
	name, tool, args string
	wantErr          bool
	want             []string // each must be in the text
	not              []string // none may be
}

func runCases(t *testing.T, f fixture, cases []toolCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			args := strings.ReplaceAll(tt.args, "$OUT", f.outside)
			args = strings.ReplaceAll(args, "$WS", f.dir)
			args = strings.ReplaceAll(args, "$SKILL", f.skill)
			got, isErr := f.call(t, tt.tool, args)
			if isErr != tt.wantErr {
				t.Errorf("IsError = %v, want %v; text:\n%s", isErr, tt.wantErr, got)
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "$WS", f.dir)
				if !strings.Contains(got, w) {
					t.Errorf("text lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("text has %q:\n%s", n, got)
				}
			}
		})
	}
}

func TestRead(t *testing.T) {
	f := newFixture(t)
	runCases(t, f, []toolCase{
		{"numbered like cat -n", Read, `{"file_path":"notes.txt"}`, false, []string{"     1\talpha\n", "     4\tbeta\n"}, nil},
		{"offset and limit", Read, `{"file_path":"notes.txt","offset":2,"limit":2}`, false,
			[]string{"     2\tbeta\n     3\tgamma\n", "read on with offset 4"}, []string{"alpha"}},
		{"absolute inside", Read, `{"file_path":"$WS/src/main.go"}`, false, []string{"package main"}, nil},
		{"last line without newline", Read, `{"file_path":"one.txt"}`, false, []string{"     1\tonly one line\n"}, nil},
		{"empty", Read, `{"file_path":"empty.txt"}`, false, []string{"empty.txt is empty"}, nil},
		{"offset past the end", Read, `{"file_path":"notes.txt","offset":9}`, true, []string{"has 4 lines"}, nil},
		{"Latin-1 text reads", Read, `{"file_path":"latin1.txt"}`, false, []string{"au lait"}, nil},
		{"binary refused", Read, `{"file_path":"picture.png"}`, true, []string{"picture.png is a binary file"}, nil},
		{"folder", Read, `{"file_path":"src"}`, true, []string{"is a folder", "Glob"}, nil},
		{"missing", Read, `{"file_path":"nope.txt"}`, true, []string{"nope.txt does not exist"}, nil},
		{"symlink inside", Read, `{"file_path":"in-link.txt"}`, false, []string{"alpha"}, nil},
		{"a skill's folder, read-only", Read, `{"file_path":"$SKILL/scripts/x.py"}`, false, []string{"print('beta')"}, nil},
		{"escape ..", Read, `{"file_path":"../outside/secret.txt"}`, true, []string{"outside the workspace $WS"}, []string{"top secret"}},
		{"escape .. inside a path", Read, `{"file_path":"src/../../outside/secret.txt"}`, true, []string{"outside the workspace $WS"}, []string{"top secret"}},
		{"escape absolute", Read, `{"file_path":"$OUT/secret.txt"}`, true, []string{"outside the workspace $WS"}, []string{"top secret"}},
		{"escape by a symlinked file", Read, `{"file_path":"secret-link.txt"}`, true, []string{"leads outside the workspace $WS"}, []string{"top secret"}},
		{"escape by a symlinked folder", Read, `{"file_path":"out-link/secret.txt"}`, true, []string{"leads outside the workspace $WS"}, []string{"top secret"}},
		{"etc/passwd", Read, `{"file_path":"/etc/passwd"}`, true, []string{"outside the workspace"}, []string{"root:"}},
		{"missing argument", Read, `{}`, true, []string{"file_path"}, nil},
		{"unknown argument", Read, `{"file_path":"notes.txt","path":"x"}`, true, []string{"path"}, nil},
	})
}

func TestWrite(t *testing.T) {
	f := newFixture(t)
	runCases(t, f, []toolCase{
		{"new file, folders made", Write, `{"file_path":"out/report.md","content":"# Report\n"}`, false, []string{"Wrote out/report.md (9 bytes)"}, nil},
		{"replace", Write, `{"file_path":"notes.txt","content":"new"}`, false, []string{"Replaced notes.txt"}, nil},
		{"absolute inside", Write, `{"file_path":"$WS/abs.txt","content":"a"}`, false, []string{"Wrote abs.txt"}, nil},
		{"escape ..", Write, `{"file_path":"../outside/x.txt","content":"pwned"}`, true, []string{"outside the workspace $WS"}, nil},
		{"escape absolute", Write, `{"file_path":"$OUT/x.txt","content":"pwned"}`, true, []string{"outside the workspace $WS"}, nil},
		{"a skill's folder is read-only", Write, `{"file_path":"$SKILL/x.txt","content":"pwned"}`, true, []string{"outside the workspace $WS"}, nil},
		{"escape by a symlinked folder", Write, `{"file_path":"out-link/x.txt","content":"pwned"}`, true, []string{"leads outside the workspace $WS"}, nil},
		{"escape by a symlinked file", Write, `{"file_path":"secret-link.txt","content":"pwned"}`, true, []string{"leads outside the workspace $WS"}, nil},
		{"the workspace itself", Write, `{"file_path":".","content":"x"}`, true, []string{"workspace folder itself"}, nil},
		{"a folder", Write, `{"file_path":"src","content":"x"}`, true, []string{"src"}, nil},
	})
	if b, _ := os.ReadFile(filepath.Join(f.dir, "out/report.md")); string(b) != "# Report\n" {
		t.Errorf("out/report.md = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "notes.txt")); string(b) != "new" {
		t.Errorf("notes.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(f.outside, "secret.txt")); string(b) != "top secret\n" {
		t.Errorf("the file outside changed: %q", b)
	}
	for _, p := range []string{filepath.Join(f.outside, "x.txt"), filepath.Join(f.skill, "x.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

func TestEdit(t *testing.T) {
	f := newFixture(t)
	runCases(t, f, []toolCase{
		{"unique", Edit, `{"file_path":"notes.txt","old_string":"alpha","new_string":"ALPHA"}`, false, []string{"Edited notes.txt: 1 replacement"}, nil},
		{"ambiguous", Edit, `{"file_path":"notes.txt","old_string":"beta","new_string":"BETA"}`, true, []string{"occurs 2 times", "replace_all"}, nil},
		{"replace_all", Edit, `{"file_path":"dup.txt","old_string":"x = 1","new_string":"x = 2","replace_all":true}`, false, []string{"2 replacements"}, nil},
		{"absent", Edit, `{"file_path":"notes.txt","old_string":"delta","new_string":"x"}`, true, []string{"does not occur in notes.txt"}, nil},
		{"same strings", Edit, `{"file_path":"notes.txt","old_string":"gamma","new_string":"gamma"}`, true, []string{"the same"}, nil},
		{"empty old_string", Edit, `{"file_path":"notes.txt","old_string":"","new_string":"x"}`, true, []string{"old_string is empty"}, nil},
		{"binary", Edit, `{"file_path":"picture.png","old_string":"PNG","new_string":"JPG"}`, true, []string{"binary"}, nil},
		{"missing", Edit, `{"file_path":"nope.txt","old_string":"a","new_string":"b"}`, true, []string{"does not exist"}, nil},
		{"escape by a symlinked file", Edit, `{"file_path":"secret-link.txt","old_string":"top","new_string":"no"}`, true, []string{"leads outside the workspace $WS"}, nil},
		{"escape absolute", Edit, `{"file_path":"$OUT/secret.txt","old_string":"top","new_string":"no"}`, true, []string{"outside the workspace $WS"}, nil},
	})
	if b, _ := os.ReadFile(filepath.Join(f.dir, "notes.txt")); string(b) != "ALPHA\nbeta\ngamma\nbeta\n" {
		t.Errorf("notes.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "dup.txt")); string(b) != "x = 2\nx = 2\n" {
		t.Errorf("dup.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(f.outside, "secret.txt")); string(b) != "top secret\n" {
		t.Errorf("the file outside changed: %q", b)
	}
}

func TestGlob(t *testing.T) {
	f := newFixture(t)
	runCases(t, f, []toolCase{
		{"** across folders, sorted", Glob, `{"pattern":"**/*.go"}`, false, []string{"src/main.go\nsrc/util/util.go\n"}, nil},
		{"* stays in its folder", Glob, `{"pattern":"*.txt"}`, false, []string{"notes.txt", "dup.txt"}, []string{"src/", "outside"}},
		{"under a path", Glob, `{"pattern":"*.go","path":"src"}`, false, []string{"src/main.go\n"}, []string{"util.go"}},
		{"deep", Glob, `{"pattern":"deep/**/leaf.md"}`, false, []string{"deep/a/b/c/leaf.md"}, nil},
		{".git skipped", Glob, `{"pattern":"**/config"}`, false, []string{"No files match"}, nil},
		{"a skill's folder", Glob, `{"pattern":"**/*.py","path":"$SKILL"}`, false, []string{filepath.Join("skill", "scripts", "x.py")}, nil},
		{"no match", Glob, `{"pattern":"**/*.rs"}`, false, []string{"No files match"}, nil},
		{"malformed", Glob, `{"pattern":"[a"}`, true, []string{"malformed"}, nil},
		{"escape", Glob, `{"pattern":"*","path":"../outside"}`, true, []string{"outside the workspace $WS"}, []string{"secret"}},
		{"escape by a symlinked folder", Glob, `{"pattern":"*","path":"out-link"}`, true, []string{"leads outside the workspace $WS"}, []string{"secret.txt"}},
	})
}

func TestGrep(t *testing.T) {
	f := newFixture(t)
	runCases(t, f, []toolCase{
		{"files_with_matches by default", Grep, `{"pattern":"beta"}`, false,
			[]string{"deep/a/b/c/leaf.md\ndocs/readme.md\nin-link.txt\nnotes.txt\n"}, []string{".git", "util.go", "secret"}},
		{"-i", Grep, `{"pattern":"beta","-i":true}`, false, []string{"src/util/util.go"}, nil},
		{"content with line numbers", Grep, `{"pattern":"^beta$","output_mode":"content"}`, false, []string{"notes.txt:2:beta\nnotes.txt:4:beta\n"}, nil},
		{"content without", Grep, `{"pattern":"gamma","output_mode":"content","-n":false}`, false, []string{"notes.txt:gamma\n"}, nil},
		{"count", Grep, `{"pattern":"beta","output_mode":"count","path":"notes.txt"}`, false, []string{"notes.txt:2\n"}, nil},
		{"glob filter by name", Grep, `{"pattern":"package","glob":"*.go"}`, false, []string{"src/main.go", "src/util/util.go"}, []string{"notes"}},
		{"head_limit", Grep, `{"pattern":"beta","head_limit":1}`, false, []string{"deep/a/b/c/leaf.md\n", "stopped at 1"}, []string{"notes.txt"}},
		{"binary skipped", Grep, `{"pattern":"PNG"}`, false, []string{"No matches"}, nil},
		{"a skill's folder", Grep, `{"pattern":"beta","path":"$SKILL"}`, false, []string{filepath.Join("skill", "SKILL.md")}, nil},
		{"bad regex", Grep, `{"pattern":"(unclosed"}`, true, []string{"not a valid regular expression (RE2 syntax)", "missing closing )"}, nil},
		{"bad mode", Grep, `{"pattern":"a","output_mode":"lines"}`, true, []string{"output_mode"}, nil},
		{"escape", Grep, `{"pattern":"secret","path":"$OUT"}`, true, []string{"outside the workspace $WS"}, []string{"top"}},
		{"escape by a symlinked file", Grep, `{"pattern":"secret","path":"secret-link.txt"}`, true, []string{"leads outside the workspace $WS"}, []string{"top"}},
	})
}

// The built-ins' names are the ones manifests may list.
func TestNamesMatchSpec(t *testing.T) {
	var names []string
	for n := range builtins {
		names = append(names, n)
	}
	if got, want := slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(spec.WorkspaceTools)); !slices.Equal(got, want) {
		t.Errorf("built-ins %v, spec.WorkspaceTools %v", got, want)
	}
	for _, n := range Names() {
		if d := Def(n); d.Name != n || d.Description == "" || !json.Valid(d.Parameters) {
			t.Errorf("Def(%s) = %+v", n, d)
		}
	}
	for _, n := range []string{Bash, Write, Edit} {
		if !Effect(n) {
			t.Errorf("%s is not an effect", n)
		}
	}
	for _, n := range []string{Read, Glob, Grep} {
		if Effect(n) {
			t.Errorf("%s is an effect", n)
		}
	}
}

// docs/workspace.md states what each definition costs in tokens, counted
// as request events count a tool: name, description and input schema.
func TestDefinitionCostInDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/workspace.md")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range Names() {
		d := Def(n)
		c := tokens.Count(d.Name) + tokens.Count(d.Description) + tokens.Count(string(d.Parameters))
		total += c
		if row := fmt.Sprintf("| `%s` | %d |", n, c); !strings.Contains(string(b), row) {
			t.Errorf("docs/workspace.md lacks the row %q", row)
		}
	}
	if row := fmt.Sprintf("| all six | %d |", total); !strings.Contains(string(b), row) {
		t.Errorf("docs/workspace.md lacks the row %q", row)
	}
}

// Each built-in's schema compiles, and the tool is offered with the JSON
// its compiled input keeps, though offering it compiles nothing.
func TestDefs(t *testing.T) {
	for _, n := range Names() {
		in := inputs()[n]()
		if got, want := string(Def(n).Parameters), string(in.Params()); got != want {
			t.Errorf("%s is offered with %s, its input keeps %s", n, got, want)
		}
	}
}
