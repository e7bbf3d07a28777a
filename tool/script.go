package tool

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsdrun/fsd/spec"
)

// ScriptToolName is the built-in tool that runs a file under a skill's
// scripts/ folder.
const ScriptToolName = "run_skill_script"

// interpreters run a script that is not executable, by extension: skill
// folders travel as zip files and lose the executable bit, and Agent
// Skills instructions say "run scripts/x.py", not "chmod +x".
var interpreters = map[string][]string{
	".py": {"python3"}, ".sh": {"sh"}, ".bash": {"bash"}, ".js": {"node"}, ".mjs": {"node"},
	".rb": {"ruby"}, ".pl": {"perl"}, ".php": {"php"}, ".ts": {"npx", "tsx"},
}

// RunScript runs script (a path relative to dir, inside its scripts/
// folder) with args as argv — no shell — under the same rules as a command
// tool: trust (an untrusted skill's script is refused with the --trust
// hint), the minimal environment plus FSD_RUN_ID and FSD_CALL_ID, the
// default timeout, the output cap and the stderr tail. An executable file
// runs itself; otherwise its #! line or its extension names the
// interpreter. The path is checked like a reader's: no absolute path, no
// "..", no symlink leading out of the skill's folder.
//
// T4: a script follows a command tool's trust rule.
func RunScript(ctx context.Context, dir, script string, args []string, opts ...Option) Result {
	c := &Tool{name: ScriptToolName, kind: spec.RunCommand, timeout: DefaultTimeout, trusted: true, lookupEnv: os.LookupEnv}
	for _, o := range opts {
		o(c)
	}
	c.dir = dir
	if abs, err := filepath.Abs(dir); err == nil {
		c.dir = abs
	}
	if !c.trusted {
		return c.refusal()
	}
	full, problem := ScriptPath(c.dir, script)
	if problem != "" {
		return errorf("%s", problem)
	}
	argv, problem := scriptArgv(full)
	if problem != "" {
		return errorf("%s", problem)
	}
	return c.exec(ctx, append(argv, args...))
}

// ScriptPath resolves script inside dir's scripts/ folder: relative,
// slash-separated, no "..", no symlink out of dir, a regular file. It
// returns the absolute path or what is wrong, for the model to read.
func ScriptPath(dir, script string) (string, string) {
	if script == "" {
		return "", `"script" is empty; give a path such as scripts/run.py`
	}
	if filepath.IsAbs(script) || strings.HasPrefix(script, "/") || strings.Contains(script, `\`) {
		return "", fmt.Sprintf("%q is absolute; give a path under the skill's scripts/ folder, such as scripts/run.py", script)
	}
	clean := filepath.ToSlash(filepath.Clean(script))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Sprintf("%q leaves the skill's folder", script)
	}
	if !strings.HasPrefix(clean, "scripts/") {
		return "", fmt.Sprintf("%q is not under the skill's scripts/ folder", script)
	}
	full := filepath.Join(dir, filepath.FromSlash(clean))
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Sprintf("no script %q in the skill's folder", script)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Sprintf("cannot resolve the skill's folder: %v", err)
	}
	if r, err := filepath.Rel(root, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Sprintf("%q is a symlink that leads outside the skill's folder", script)
	}
	st, err := os.Stat(real)
	if err != nil || !st.Mode().IsRegular() {
		return "", fmt.Sprintf("%q is not a file", script)
	}
	return full, ""
}

// scriptArgv is how to start a script: itself when executable, else the
// interpreter its #! line or extension names.
func scriptArgv(full string) ([]string, string) {
	st, err := os.Stat(full)
	if err != nil {
		return nil, err.Error()
	}
	if st.Mode().Perm()&0o111 != 0 {
		return []string{full}, ""
	}
	if interp := shebang(full); len(interp) > 0 {
		return append(interp, full), ""
	}
	if interp, ok := interpreters[strings.ToLower(filepath.Ext(full))]; ok {
		return append(append([]string(nil), interp...), full), ""
	}
	return nil, fmt.Sprintf("%s is not executable and has no #! line or known extension (.py, .sh, .js, .rb, .pl, …) to pick an interpreter", filepath.Base(full))
}

// shebang reads a script's #! line: "#!/usr/bin/env python3" gives
// [/usr/bin/env python3].
func shebang(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return nil
	}
	if !strings.HasPrefix(line, "#!") {
		return nil
	}
	return strings.Fields(strings.TrimPrefix(line, "#!"))
}
