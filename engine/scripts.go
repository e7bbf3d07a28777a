package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
)

// runScriptDef is the built-in tool that runs a loaded skill's script, so
// an Agent Skills folder whose instructions say "run scripts/x.py" works
// unchanged. It is offered while a loaded skill has a scripts/ folder.
var runScriptDef = model.ToolDef{
	Name: tool.ScriptToolName,
	Description: "Run a script from a loaded skill's scripts/ folder, as its instructions say (for example " +
		`"run scripts/extract.py FILE"). It runs in the workspace (the working directory: give the user's and ` +
		"your own files relative to it); the skill's files are at $SKILL_DIR. A script without a #! line runs through the interpreter its extension " +
		`names (.py: python3). For "python -m scripts.package_skill DIR", give "module": "scripts.package_skill" ` +
		`and "args": ["DIR"] instead of "script": it runs python3 -m with the skill's folder on PYTHONPATH. ` +
		"No shell: args are passed as they are. The result is the script's output; a failure carries its exit " +
		"status and the end of its stderr.",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"skill":{"type":"string","description":"The loaded skill's id (default: the active skill with scripts)."},` +
		`"script":{"type":"string","description":"Path relative to the skill's folder, under scripts/, e.g. scripts/extract.py."},` +
		`"module":{"type":"string","description":"Instead of script: a Python module under scripts/, e.g. scripts.package_skill, run as python3 -m."},` +
		`"args":{"type":"array","items":{"type":"string"},"description":"Arguments, one per element."}},` +
		`"additionalProperties":false}`),
}

// hasScripts reports whether a skill ships a scripts/ folder.
func hasScripts(s *spec.Skill) bool {
	for _, r := range s.Resources {
		if strings.HasPrefix(r, "scripts/") {
			return true
		}
	}
	return false
}

// scriptsLoaded reports whether any loaded skill has scripts.
func (m *manager) scriptsLoaded() bool {
	for _, l := range m.loaded {
		if hasScripts(l.skill) {
			return true
		}
	}
	return false
}

// runScript answers a run_skill_script call: it names a loaded skill (or
// the most recent with scripts) and runs the script under the command
// tools' rules (tool.RunScript), trust included.
func (m *manager) runScript(ctx context.Context, args json.RawMessage) model.ToolResult {
	a, l, bad := m.scriptCall(args)
	if bad != nil {
		return *bad
	}
	s := l.skill
	opts := m.box.programOptions(s, nil)
	var res tool.Result
	if a.Module != "" {
		res = tool.RunModule(ctx, s.Dir, a.Module, a.Args, opts...)
	} else {
		res = tool.RunScript(ctx, s.Dir, a.Script, a.Args, opts...)
	}
	return model.ToolResult{Text: res.Text, IsError: res.IsError}
}

// scriptArgs are run_skill_script's arguments.
type scriptArgs struct {
	Skill  string   `json:"skill"`
	Script string   `json:"script"`
	Module string   `json:"module"`
	Args   []string `json:"args"`
}

// scriptCall reads a run_skill_script call: its arguments and the loaded
// skill whose script it runs, or the error result the model reads.
func (m *manager) scriptCall(args json.RawMessage) (scriptArgs, *loadedSkill, *model.ToolResult) {
	var a scriptArgs
	bad := func(r model.ToolResult) (scriptArgs, *loadedSkill, *model.ToolResult) { return a, nil, &r }
	// Strictly, as its schema says (no additional properties): a model
	// that sends "timeout" or "cwd" must hear that nothing took it, not
	// have its script run as if it had.
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return bad(toolError("ARGUMENTS_INVALID", `arguments must be {"skill": "id", "script": "scripts/x.py", "args": ["…"]}: `+err.Error()))
	}
	if module, ok := strings.CutPrefix(strings.TrimSpace(a.Script), "-m "); ok && a.Module == "" {
		// "python -m scripts.x" read off the instructions, put in script.
		a.Script, a.Module = "", strings.TrimSpace(module)
	}
	switch {
	case a.Script == "" && a.Module == "":
		return bad(toolError("ARGUMENTS_INVALID", `give "script" (a path such as scripts/extract.py) or "module" (a Python module such as scripts.package_skill)`))
	case a.Script != "" && a.Module != "":
		return bad(toolError("ARGUMENTS_INVALID", `give "script" or "module", not both`))
	}
	var l *loadedSkill
	if a.Skill == "" {
		for i := len(m.loaded) - 1; i >= 0 && l == nil; i-- {
			if hasScripts(m.loaded[i].skill) {
				l = m.loaded[i]
			}
		}
	} else {
		if !spec.ValidID(a.Skill) {
			return bad(toolError(codeIDInvalid, fmt.Sprintf("%q is not a skill id: ids are %s", a.Skill, spec.IDRule)))
		}
		_, l = m.find(spec.NormalizeID(a.Skill))
		if l == nil {
			return bad(toolError("SKILL_NOT_LOADED", fmt.Sprintf("skill %q is not loaded; read_skill it first", a.Skill)))
		}
	}
	if l == nil || !hasScripts(l.skill) {
		return bad(toolError("NO_SCRIPTS", "no loaded skill has a scripts/ folder"))
	}
	return a, l, nil
}
