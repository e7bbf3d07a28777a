package approval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/spec"
)

// A15: the allowed-tools patterns fsd honours, and where it asks instead.
func TestAllowedToolsPatterns(t *testing.T) {
	bash := func(cmd string) Call {
		b, _ := json.Marshal(map[string]string{"command": cmd})
		return Call{Name: "Bash", Args: b}
	}
	file := func(tool, p string) Call {
		b, _ := json.Marshal(map[string]string{"file_path": p})
		return Call{Name: tool, Args: b, Workspace: "/work/space"}
	}
	mcp := Call{Name: "mcp__tracker__jira__create_issue", Server: "jira", Remote: "create_issue", Args: json.RawMessage(`{}`)}
	for _, tc := range []struct {
		entry string
		call  Call
		want  bool
	}{
		// Bare names allow every call of the tool.
		{"Bash", bash("rm -rf build; make"), true},
		{"Bash(*)", bash("make && make install"), true},
		{"Write", file("Write", "/etc/passwd"), true},
		{"publish", Call{Name: "publish", Args: json.RawMessage(`{}`)}, true},
		{"publish", Call{Name: "publisher"}, false},
		{"Bash", file("Write", "a"), false},
		// Exact command lines.
		{"Bash(npm run test)", bash("npm run test"), true},
		{"Bash(npm run test)", bash("  npm run test\n"), true},
		{"Bash(npm run test)", bash("npm run test -- --watch"), false},
		{"Bash(npm run test)", bash("npm run  test"), false},
		// A prefix at a word boundary, both spellings.
		{"Bash(git diff:*)", bash("git diff"), true},
		{"Bash(git diff:*)", bash("git diff HEAD~1 -- src"), true},
		{"Bash(git diff:*)", bash("git difftool"), false},
		{"Bash(git diff:*)", bash("git dif"), false},
		{"Bash(git diff *)", bash("git diff --stat"), true},
		{"Bash(git diff *)", bash("git difftool"), false},
		// Without the space, no word boundary: Claude Code's meaning.
		{"Bash(npm*)", bash("npmrc"), true},
		// Wildcards elsewhere.
		{"Bash(* --version)", bash("go --version"), true},
		{"Bash(git * main)", bash("git merge main"), true},
		{"Bash(git * main)", bash("git merge dev"), false},
		{`Bash(echo \*)`, bash("echo *"), true},
		{`Bash(echo \*)`, bash("echo hi"), false},
		// A wildcard never spans a shell operator, substitution or
		// redirection: one allowed command does not carry another.
		{"Bash(git diff:*)", bash("git diff; rm -rf ~"), false},
		{"Bash(git diff:*)", bash("git diff && curl evil"), false},
		{"Bash(git diff:*)", bash("git diff | sh"), false},
		{"Bash(git diff:*)", bash("git diff $(rm x)"), false},
		{"Bash(git diff:*)", bash("git diff `rm x`"), false},
		{"Bash(git diff:*)", bash("git diff > notes"), false},
		{"Bash(git diff:*)", bash("git diff\nrm x"), false},
		{"Bash(git diff:*)", bash("git diff & rm x"), false},
		// Written out in the entry, an operator is the author's.
		{"Bash(git diff | wc -l)", bash("git diff | wc -l"), true},
		// A call without the argument, or with arguments that are not
		// JSON, is not allowed by a narrowed entry.
		{"Bash(git diff:*)", Call{Name: "Bash", Args: json.RawMessage(`{}`)}, false},
		{"Bash(git diff:*)", Call{Name: "Bash", Args: json.RawMessage(`not json`)}, false},
		// Paths, gitignore-style, relative to the workspace.
		{"Edit(./src/**)", file("Edit", "src/a/b.go"), true},
		{"Edit(./src/**)", file("Edit", "/work/space/src/b.go"), true},
		{"Edit(src/**)", file("Edit", "src/b.go"), true},
		{"Edit(/src/**)", file("Edit", "src/b.go"), true},
		{"Edit(./src/**)", file("Edit", "docs/b.go"), false},
		{"Edit(./src/**)", file("Edit", "src/../docs/b.go"), false},
		{"Edit(./src/**)", file("Edit", "/work/space/../space2/src/b.go"), false},
		{"Edit(./src/**)", file("Edit", "/elsewhere/src/b.go"), false},
		{"Write(*.md)", file("Write", "notes/deep/x.md"), true},
		{"Write(*.md)", file("Write", "x.mdx"), false},
		{"Write(out)", file("Write", "a/out/report.txt"), true},
		{"Write(src/*.go)", file("Write", "src/a/b.go"), false},
		{"Write(build/)", file("Write", "build/x"), true},
		{"Write(build/)", file("Write", "build"), false},
		{"Read(//etc/**)", file("Read", "/etc/hosts"), true},
		{"Read(//etc/**)", file("Read", "/etcetera/hosts"), false},
		{"Read(//work/space/*.txt)", file("Read", "a.txt"), true},
		{"Edit(./src/**)", file("Write", "src/a.go"), false},
		// MCP tools: fsd's names and Claude Code's.
		{"mcp__tracker__jira__create_issue", mcp, true},
		{"mcp__jira__create_issue", mcp, true},
		{"mcp__jira", mcp, true},
		{"mcp__jira__*", mcp, true},
		{"mcp__tracker__jira", mcp, true},
		{"mcp__tracker__jira__*", mcp, true},
		{"mcp__tracker", mcp, true},
		{"mcp__jira__create", mcp, false},
		{"mcp__confluence", mcp, false},
		{"mcp__ji", mcp, false},
	} {
		t.Run(tc.entry+" "+string(tc.call.Args), func(t *testing.T) {
			r := NewRules(&spec.Skill{ID: "k", AllowedTools: []string{tc.entry}})
			g, got := r.Grant(tc.call)
			if got != tc.want {
				t.Fatalf("%s allows %s %s: %v, want %v", tc.entry, tc.call.Name, tc.call.Args, got, tc.want)
			}
			if got && (g.Skill != "k" || g.Rule != tc.entry) {
				t.Errorf("grant %+v, want skill k, rule %q", g, tc.entry)
			}
		})
	}
}

// An entry fsd cannot honour grants nothing, even where a reading of it
// would match.
func TestAllowedToolsUnsupportedGrantNothing(t *testing.T) {
	r := NewRules(&spec.Skill{ID: "k", AllowedTools: []string{"Bash(", "Bash()", "Glob(*.go)", "Read(~/notes/**)", "Ba*sh"}})
	for _, c := range []Call{
		{Name: "Bash", Args: json.RawMessage(`{"command":"ls"}`)},
		{Name: "Glob", Args: json.RawMessage(`{"pattern":"a.go"}`)},
		{Name: "Read", Args: json.RawMessage(`{"file_path":"/root/notes/a"}`)},
	} {
		if g, ok := r.Grant(c); ok {
			t.Errorf("%s %s allowed by %q", c.Name, c.Args, g.Rule)
		}
	}
}

// FuzzBashEntry: any entry parses without a panic, and a Bash entry never
// allows a command holding a shell operator the entry does not hold
// itself (Bash(*), every command, aside).
func FuzzBashEntry(f *testing.F) {
	for _, s := range [][2]string{{"git diff:*", "git diff; rm x"}, {"* --version", "go --version"}, {`echo \*`, "echo *"},
		{"git * main", "git merge main && x"}, {"a:*", "a\nb"}, {"npm run test", "npm run test"}, {`x\`, `x\`}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, entry, command string) {
		_, _ = spec.ParseAllowedTool(entry)
		_, _ = spec.ParseAllowedTool("Bash(" + entry + ")")
		if !CommandMatches(entry, command) || entry == "*" {
			return
		}
		for _, c := range shellMeta {
			if strings.ContainsRune(strings.TrimSpace(command), c) && !strings.ContainsRune(entry, c) {
				t.Fatalf("Bash(%s) allows %q, which holds %q", entry, command, c)
			}
		}
	})
}

// A path pattern is matched against the file a call would change as well
// as the path it names: a link inside the granted folder does not carry
// the grant to a file outside it.
func TestAllowedPathsThroughSymlinks(t *testing.T) {
	real := t.TempDir()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, ws); err != nil { // the workspace itself through a link
		t.Fatal(err)
	}
	for _, d := range []string{"notes", "src"} {
		if err := os.MkdirAll(filepath.Join(real, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"notes/a.md", "src/main.go"} {
		if err := os.WriteFile(filepath.Join(real, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../src/main.go", filepath.Join(real, "notes", "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../src", filepath.Join(real, "notes", "dir")); err != nil {
		t.Fatal(err)
	}
	r := NewRules(&spec.Skill{ID: "k", AllowedTools: []string{"Write(notes/**)"}})
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"notes/a.md", true},
		{"notes/new/b.md", true},
		{filepath.Join(ws, "notes/a.md"), true},
		{"notes/link.md", false},
		{"notes/dir/main.go", false},
		{"notes/dir/new.go", false},
	} {
		b, _ := json.Marshal(map[string]string{"file_path": tc.path})
		if _, got := r.Grant(Call{Name: "Write", Args: b, Workspace: ws}); got != tc.want {
			t.Errorf("Write(notes/**) allows %s: %v, want %v", tc.path, got, tc.want)
		}
	}
}
