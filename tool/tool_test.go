package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/internal/proctest"
	"github.com/fsdrun/fsd/spec"
)

// skillDir makes a skill folder with small scripts the tests run as
// argv[0].
func skillDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	scripts := map[string]string{
		"hello.sh": "#!/bin/sh\nprintf 'hello %s from %s' \"$1\" \"$(basename \"$PWD\")\"\n",
		// 10,000 bytes of noise on stderr, then the line that matters.
		"fail.sh":     "#!/bin/sh\nhead -c 10000 /dev/zero | tr '\\0' x >&2\necho >&2\necho 'boom: bad week' >&2\nexit 3\n",
		"spawn.sh":    "#!/bin/sh\nsleep 30 &\necho $! > \"$1\"\nsleep 30\n",
		"noexec.sh":   "#!/bin/sh\necho never\n",
		"printenv.sh": "#!/bin/sh\nprintf '%s|' \"$HOME\" \"${FSD_TEST_SECRET:-unset}\"\n",
	}
	os.Mkdir(filepath.Join(dir, "scripts"), 0o755)
	for name, body := range scripts {
		mode := os.FileMode(0o755)
		if name == "noexec.sh" {
			mode = 0o644
		}
		if err := os.WriteFile(filepath.Join(dir, "scripts", name), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func command(argv ...string) spec.Tool {
	return spec.Tool{Name: "t", Run: spec.ToolRun{Kind: spec.RunCommand, Command: argv}}
}

var weekSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"week": map[string]any{"type": "string", "pattern": "^[0-9]{4}-W[0-9]{2}$"}},
	"required":   []any{"week"},
}

func TestCall(t *testing.T) {
	dir := skillDir(t)
	base := filepath.Base(dir)
	withInput := func(tl spec.Tool, in map[string]any) spec.Tool { tl.Input = in; return tl }
	withTimeout := func(tl spec.Tool, d time.Duration) spec.Tool { tl.Run.Timeout = d; return tl }
	reply := func(tmpl string) spec.Tool {
		return spec.Tool{Name: "t", Run: spec.ToolRun{Kind: spec.RunReply, Reply: tmpl}}
	}
	tests := []struct {
		name string
		tool spec.Tool
		opts []Option
		args string
		want Result
	}{
		{"printf over arguments", command("printf", "%s-%s", "{{.a}}", "{{.b}}"), nil, `{"a":"x","b":7}`, Result{Text: "x-7"}},
		{"json helper", command("printf", "%s", "{{json .rows}}"), nil, `{"rows":[1,"two"]}`, Result{Text: `[1,"two"]`}},
		{"no arguments at all", command("printf", "ok"), nil, ``, Result{Text: "ok"}},
		{"empty output", command("printf", ""), nil, `{}`, Result{Text: "(no output)"}},
		{"relative argv[0] runs in the skill folder", command("./scripts/hello.sh", "{{.who}}"), nil, `{"who":"ann"}`,
			Result{Text: "hello ann from " + base}},
		{"schema: wrong type", withInput(command("printf", "{{.week}}"), weekSchema), nil, `{"week":48}`,
			Result{IsError: true, Text: "invalid arguments:\n- at /week: got number, want string"}},
		{"schema: missing property", withInput(command("printf", "{{.week}}"), weekSchema), nil, `{}`,
			Result{IsError: true, Text: "invalid arguments:\n- at /: missing property 'week'"}},
		{"schema: pattern", withInput(command("printf", "{{.week}}"), weekSchema), nil, `{"week":"48"}`,
			Result{IsError: true, Text: "invalid arguments:\n- at /week: '48' does not match pattern '^[0-9]{4}-W[0-9]{2}$'"}},
		{"not an object", command("printf", "x"), nil, `[1,2]`,
			Result{IsError: true, Text: "arguments must be a JSON object, got an array"}},
		{"not JSON", command("printf", "x"), nil, `{"a":`,
			Result{IsError: true, Text: "arguments are not valid JSON: unexpected EOF"}},
		{"template with missing argument", command("printf", "{{.week}}"), nil, `{}`,
			Result{IsError: true, Text: `command argument 1: missing argument "week"`}},
		{"missing binary", command("fsd-no-such-binary"), nil, `{}`,
			Result{IsError: true, Text: `command not found: "fsd-no-such-binary" is not in PATH`}},
		{"missing script", command("./scripts/nope.sh"), nil, `{}`,
			Result{IsError: true, Text: `command not found: "./scripts/nope.sh" does not exist in the skill folder`}},
		{"script not executable", command("./scripts/noexec.sh"), nil, `{}`,
			Result{IsError: true, Text: `cannot run "./scripts/noexec.sh": permission denied (is it executable?)`}},
		{"timeout", withTimeout(command("sleep", "10"), 200*time.Millisecond), nil, `{}`,
			Result{IsError: true, Text: "timed out after 200ms"}},
		{"untrusted skill", command("printf", "x"), []Option{WithTrust(false)}, `{}`,
			Result{IsError: true, Text: "tool t did not run: the skill's folder " + dir + " is not trusted to run commands. " +
				"Only skills under the workflow's folder or a --trust folder may; to allow this one, run fsd with --trust " + dir}},
		{"untrusted skill named", command("printf", "x"), []Option{WithTrust(false), WithSkill("ops")}, `{}`,
			Result{IsError: true, Text: "tool t of skill ops did not run: the skill's folder " + dir + " is not trusted to run commands. " +
				"Only skills under the workflow's folder or a --trust folder may; to allow this one, run fsd with --trust " + dir}},
		{"untrusted skill's reply still works", reply("hi"), []Option{WithTrust(false)}, `{}`, Result{Text: "hi"}},
		{"reply", reply("Week {{.week}}: {{.n}} rows"), nil, `{"week":"2026-W48","n":42}`, Result{Text: "Week 2026-W48: 42 rows"}},
		{"reply with missing argument", reply("Week {{.week}}"), nil, `{}`,
			Result{IsError: true, Text: `reply: missing argument "week"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := Compile(tt.tool, dir, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			got := tl.Call(context.Background(), json.RawMessage(tt.args), nil)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Call(%s) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestNonZeroExitKeepsStderrTail(t *testing.T) {
	tl, err := Compile(command("./scripts/fail.sh"), skillDir(t))
	if err != nil {
		t.Fatal(err)
	}
	got := tl.Call(context.Background(), nil, nil)
	if !got.IsError || !strings.HasPrefix(got.Text, "exited with status 3\nstderr (last 4 KiB):\n") {
		t.Fatalf("got %+v, want an error starting with the exit status", got)
	}
	if !strings.HasSuffix(got.Text, "boom: bad week\n") {
		t.Errorf("stderr's last line is missing: ...%q", got.Text[max(len(got.Text)-60, 0):])
	}
	if n := strings.Count(got.Text, "x"); n > StderrTail {
		t.Errorf("%d bytes of stderr noise kept, want at most the %d-byte tail", n, StderrTail)
	}
}

func TestHugeOutputTruncated(t *testing.T) {
	tl, err := Compile(command("head", "-c", "100000000", "/dev/zero"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := tl.Call(context.Background(), nil, nil)
	const mark = "\n[output truncated at 1 MiB]"
	if got.IsError || !got.Truncated {
		t.Fatalf("IsError %v, Truncated %v; want a truncated success", got.IsError, got.Truncated)
	}
	if !strings.HasSuffix(got.Text, mark) || len(got.Text) != MaxOutputBytes+len(mark) {
		t.Errorf("text is %d bytes ending %q; want %d bytes of output and the mark", len(got.Text), got.Text[max(len(got.Text)-40, 0):], MaxOutputBytes)
	}
}

func TestEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("FSD_TEST_SECRET", "hunter2")
	t.Setenv("HOME", "/home/fsd-test")
	dir := skillDir(t)
	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"undeclared", nil, "/home/fsd-test|unset|"},
		{"declared", []string{"FSD_TEST_SECRET"}, "/home/fsd-test|hunter2|"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spt := command("./scripts/printenv.sh")
			spt.Run.Env = tt.env
			tl, err := Compile(spt, dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := tl.Call(context.Background(), nil, nil); got != (Result{Text: tt.want}) {
				t.Errorf("got %+v, want %q", got, tt.want)
			}
		})
	}
	// And the whole environment, through coreutils' env.
	tl, _ := Compile(command("env"), dir)
	got := tl.Call(context.Background(), nil, nil)
	if strings.Contains(got.Text, "hunter2") || !strings.Contains(got.Text, "PATH=") {
		t.Errorf("env printed %q; want PATH and no secret", got.Text)
	}
	// SKILL_DIR is fsd's, like FSD_CALL_ID (which a call outside a run
	// does not have).
	if lines := strings.Count(got.Text, "\n"); lines != 3 || !strings.Contains(got.Text, "SKILL_DIR="+dir+"\n") {
		t.Errorf("env has %d variables, want 3 (PATH, HOME, SKILL_DIR=%s):\n%s", lines, dir, got.Text)
	}
}

// A command runs in the run's workspace; a program named by a relative
// path is still the skill's, and the skill's folder is SKILL_DIR.
func TestCommandRunsInTheWorkspace(t *testing.T) {
	dir := skillDir(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "input.txt"), []byte("the user's file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		argv []string
		want string
	}{
		{"working folder", []string{"sh", "-c", `pwd; cat input.txt`}, ws + "\nthe user's file"},
		{"SKILL_DIR", []string{"sh", "-c", `printf %s "$SKILL_DIR"`}, dir},
		{"relative program from the skill", []string{"./scripts/hello.sh", "ann"}, "hello ann from " + filepath.Base(ws)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := Compile(command(tt.argv...), dir, WithWorkspace(ws))
			if err != nil {
				t.Fatal(err)
			}
			if d := tl.Def().Description; !strings.HasSuffix(d, WorkspaceNote) {
				t.Errorf("the description %q does not say where it runs", d)
			}
			if got := tl.Call(context.Background(), nil, nil); got.IsError || got.Text != tt.want {
				t.Errorf("got %+v, want %q", got, tt.want)
			}
		})
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	dir := skillDir(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	spt := command("./scripts/spawn.sh", pidFile)
	spt.Run.Timeout = 300 * time.Millisecond
	tl, err := Compile(spt, dir, unconfined)
	if err != nil {
		t.Fatal(err)
	}
	got := tl.Call(context.Background(), nil, nil)
	if got != (Result{IsError: true, Text: "timed out after 300ms"}) {
		t.Fatalf("got %+v", got)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// The background sleep got SIGKILL with its group.
	if !proctest.Gone(pid) {
		t.Fatalf("child %d still running after the timeout", pid)
	}
}

func TestCancel(t *testing.T) {
	tl, _ := Compile(command("sleep", "10"), t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := tl.Call(ctx, nil, nil)
	if got != (Result{IsError: true, Text: "cancelled: context canceled"}) {
		t.Errorf("got %+v", got)
	}
}

func TestArgumentsTooLarge(t *testing.T) {
	tl, _ := Compile(command("printf", "x"), t.TempDir())
	big := `{"a":"` + strings.Repeat("x", MaxArgsBytes) + `"}`
	got := tl.Call(context.Background(), json.RawMessage(big), nil)
	want := Result{IsError: true, Text: "arguments are 1048584 bytes; the limit is 1 MiB (1048576 bytes)"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestStateAndStore(t *testing.T) {
	kv := NewMemKV()
	tools := map[string]*Tool{}
	for _, op := range []string{"get", "set", "delete"} {
		tl, err := Compile(spec.Tool{Name: op, Run: spec.ToolRun{Kind: spec.RunStore, Op: op}}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		tools[op] = tl
	}
	steps := []struct {
		op, args string
		want     Result
	}{
		{"get", `{"key":"k"}`, Result{Text: `"k" is unset`}},
		{"set", `{"key":"k","value":"v1"}`, Result{Text: `"k" set`}},
		{"get", `{"key":"k"}`, Result{Text: "v1"}},
		{"set", `{"key":"obj","value":{"a":1}}`, Result{Text: `"obj" set`}},
		{"get", `{"key":"obj"}`, Result{Text: `{"a":1}`}},
		{"delete", `{"key":"k"}`, Result{Text: `"k" deleted`}},
		{"delete", `{"key":"k"}`, Result{Text: `"k" was already unset`}},
		{"get", `{"key":"k"}`, Result{Text: `"k" is unset`}},
		{"set", `{"key":"k"}`, Result{IsError: true, Text: "invalid arguments:\n- at /: missing property 'value'"}},
		{"get", `{}`, Result{IsError: true, Text: "invalid arguments:\n- at /: missing property 'key'"}},
		{"get", `{"key":""}`, Result{IsError: true, Text: `argument "key" must be a non-empty string`}},
	}
	for i, s := range steps {
		if got := tools[s.op].Call(context.Background(), json.RawMessage(s.args), kv); got != s.want {
			t.Errorf("step %d: %s %s = %+v, want %+v", i, s.op, s.args, got, s.want)
		}
	}
	if got := tools["get"].Call(context.Background(), json.RawMessage(`{"key":"k"}`), nil); !got.IsError {
		t.Errorf("no KV: got %+v, want an error", got)
	}
}

func TestDef(t *testing.T) {
	tests := []struct {
		name string
		tool spec.Tool
		want string
	}{
		{"no input", command("printf"), `{"type":"object"}`},
		{"input", spec.Tool{Name: "t", Input: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "maximum": 10}}}, Run: spec.ToolRun{Kind: spec.RunReply}},
			`{"properties":{"n":{"maximum":10,"type":"integer"}},"type":"object"}`},
		{"store set", spec.Tool{Name: "t", Run: spec.ToolRun{Kind: spec.RunStore, Op: "set"}},
			`{"properties":{"key":{"type":"string"},"value":{}},"required":["key","value"],"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := Compile(tt.tool, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if got := string(tl.Def().Parameters); got != tt.want {
				t.Errorf("Parameters = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		tool spec.Tool
		want string
	}{
		{"bad template", command("printf", "{{.x"), `tool t: command: template: argv[1]:1: unclosed action`},
		{"empty command", command(), "tool t: command is empty"},
		{"bad schema", spec.Tool{Name: "t", Input: map[string]any{"type": 5}, Run: spec.ToolRun{Kind: spec.RunReply}}, "tool t: input schema: "},
		{"bad op", spec.Tool{Name: "t", Run: spec.ToolRun{Kind: spec.RunState, Op: "put"}}, `tool t: state op "put": want get, set or delete`},
		{"bad kind", spec.Tool{Name: "t", Run: spec.ToolRun{Kind: "shell"}}, `tool t: run kind "shell": want command, reply, state or store`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.tool, t.TempDir())
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestConcurrentCalls(t *testing.T) {
	kv := NewMemKV()
	set, _ := Compile(spec.Tool{Name: "s", Run: spec.ToolRun{Kind: spec.RunState, Op: "set"}}, t.TempDir())
	echo, _ := Compile(command("printf", "%s", "{{.n}}"), t.TempDir())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := json.RawMessage(`{"key":"k","value":"v","n":` + strconv.Itoa(i) + `}`)
			if r := set.Call(context.Background(), args, kv); r.IsError {
				t.Error(r.Text)
			}
			if r := echo.Call(context.Background(), args, nil); r.Text != strconv.Itoa(i) {
				t.Errorf("echo %d = %+v", i, r)
			}
		}()
	}
	wg.Wait()
}
