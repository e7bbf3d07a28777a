package tool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/internal/sandbox"
	"github.com/fsdrun/fsd/spec"
)

// ScriptToolName is the built-in tool that runs a file under a skill's
// scripts/ folder.
const ScriptToolName = "run_skill_script"

// RunScript runs script (a path relative to dir, inside its scripts/
// folder) with args as argv — no shell — under the same rules as a command
// tool: trust (an untrusted skill's script is refused with the --trust
// hint), the minimal environment plus FSD_RUN_ID and FSD_CALL_ID, the
// default timeout, the output cap and the stderr tail. An executable file
// that is a native program or has a #! line runs itself; any other file
// runs through the interpreter its #! line or its extension names
// (proc.ScriptArgv). The path is checked like a reader's: no absolute path, no
// "..", no symlink leading out of the skill's folder.
//
// T4: a script follows a command tool's trust rule.
func RunScript(ctx context.Context, dir, script string, args []string, opts ...Option) Result {
	c := scriptTool(dir, opts)
	if !c.trusted {
		return c.refusal()
	}
	full, problem := ScriptPath(c.dir, script)
	if problem != "" {
		return errorf("%s", problem)
	}
	argv, problem := proc.ScriptArgv(full)
	if problem != "" {
		return errorf("%s", problem)
	}
	return c.exec(ctx, append(argv, args...))
}

// RunModule runs a Python module of the skill in dir — `python3 -m
// module args…`, as skill instructions such as "python -m
// scripts.package_skill DIR" say — under RunScript's rules, with dir as
// the working folder and as PYTHONPATH, so the module's own imports of
// its siblings (from scripts.x import y) resolve. The module is a dotted
// name under the skill's scripts/ folder (scripts.package_skill) that
// names a file (scripts/package_skill.py) or a package with a __main__.py.
func RunModule(ctx context.Context, dir, module string, args []string, opts ...Option) Result {
	c := scriptTool(dir, opts)
	if !c.trusted {
		return c.refusal()
	}
	if problem := modulePath(c.dir, module); problem != "" {
		return errorf("%s", problem)
	}
	c.set = append(c.set, "PYTHONPATH="+c.dir)
	return c.exec(ctx, append([]string{proc.Interpreters[".py"][0], "-m", module}, args...))
}

// scriptTool is the command tool a script or module runs as: the skill's
// folder (absolute) as SKILL_DIR and, without WithWorkspace, working
// folder, the default timeout, opts applied.
func scriptTool(dir string, opts []Option) *Tool {
	c := &Tool{name: ScriptToolName, kind: spec.RunCommand, timeout: DefaultTimeout, trusted: true, lookupEnv: os.LookupEnv}
	for _, o := range opts {
		o(c)
	}
	c.dir = dir
	if abs, err := filepath.Abs(dir); err == nil {
		c.dir = abs
	}
	c.set = append(c.set, "SKILL_DIR="+c.dir)
	c.confine()
	return c
}

// modulePath checks that module is a dotted Python name under scripts/
// that resolves, like a script path, to a file inside dir.
func modulePath(dir, module string) string {
	parts := strings.Split(module, ".")
	for _, p := range parts {
		if !pyIdent(p) {
			return fmt.Sprintf("%q is not a Python module name; give a dotted name such as scripts.package_skill", module)
		}
	}
	if parts[0] != "scripts" || len(parts) < 2 {
		return fmt.Sprintf("module %q is not under the skill's scripts/ folder; give a name such as scripts.package_skill", module)
	}
	rel := strings.Join(parts, "/")
	if _, problem := ScriptPath(dir, rel+".py"); problem == "" {
		return ""
	}
	if _, problem := ScriptPath(dir, rel+"/__main__.py"); problem == "" {
		return ""
	}
	return fmt.Sprintf("no module %q in the skill's folder: neither %s.py nor %s/__main__.py is there", module, rel, rel)
}

// pyIdent reports whether s is an ASCII Python identifier.
func pyIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
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

// RunShell runs command through /bin/sh -c in dir (the run's workspace,
// also the base of a relative program) under a command tool's rules: the
// minimal environment plus FSD_RUN_ID and FSD_CALL_ID, timeout, the
// output cap, the whole process group killed when it ends. Its stderr
// goes with its stdout, in the order written: a shell user reads both.
// name is the tool the result's messages name.
func RunShell(ctx context.Context, name, dir, command string, timeout time.Duration, opts ...Option) Result {
	c := &Tool{name: name, kind: spec.RunCommand, timeout: timeout, trusted: true, lookupEnv: os.LookupEnv, merged: true}
	for _, o := range opts {
		o(c)
	}
	c.dir = dir
	if abs, err := filepath.Abs(dir); err == nil {
		c.dir = abs
	}
	c.work = c.dir
	if !c.sandboxSet {
		// The default sandbox, dir its workspace.
		c.sandbox, c.sandboxSet = &sandbox.Policy{Network: sandbox.NetOff, Workspace: c.dir}, true
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	return c.exec(ctx, []string{"/bin/sh", "-c", command})
}
