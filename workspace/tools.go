package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
)

// The built-in tools' names, as Claude Code names them.
const (
	Bash  = "Bash"
	Read  = "Read"
	Write = "Write"
	Edit  = "Edit"
	Glob  = "Glob"
	Grep  = "Grep"
)

// builtin is one built-in tool: what the model is offered and what a
// call does.
type builtin struct {
	description string
	params      string // JSON Schema of the input
	// effect: the tool changes something outside fsd (a file, whatever a
	// command does). Such a call is journaled as a command's is and
	// follows the workflow's approve: policy; the others only read.
	effect bool
	call   func(t *Tool, ctx context.Context, in json.RawMessage) tool.Result
}

// builtins is the one table of the built-in tools (spec.WorkspaceTools
// spells their names for the manifests; TestNamesMatchSpec holds the two
// together).
var builtins = map[string]builtin{
	Bash: {
		description: "Run a command line with /bin/sh -c in the workspace folder (the working directory) and return its " +
			"output (stdout and stderr together). Use it for programs: python3, git, a skill's bundled scripts by " +
			"absolute path. Timeout: 120000 ms unless given, at most 600000 ms. Output beyond 1 MiB is cut. Nothing " +
			"it starts in the background outlives the call. Prefer Read, Write, Edit, Glob and Grep for files.",
		params: `{"type":"object","properties":{` +
			`"command":{"type":"string","description":"The command line, run by /bin/sh -c."},` +
			`"timeout":{"type":"integer","minimum":1,"maximum":600000,"description":"Milliseconds before it is killed (default 120000)."},` +
			`"description":{"type":"string","description":"What the command does, in a few words."}},` +
			`"required":["command"],"additionalProperties":false}`,
		effect: true,
		call:   (*Tool).bash,
	},
	Read: {
		description: "Read a text file, its lines numbered like cat -n (from 1). A path is relative to the workspace, or " +
			"absolute inside it or inside a loaded skill's folder. At most 2000 lines unless limit says; lines over " +
			"2000 characters are cut. Binary files are refused.",
		params: `{"type":"object","properties":{` +
			`"file_path":{"type":"string","description":"The file: relative to the workspace, or absolute."},` +
			`"offset":{"type":"integer","minimum":1,"description":"The line to start at (1 is the first)."},` +
			`"limit":{"type":"integer","minimum":1,"description":"How many lines to read (default 2000)."}},` +
			`"required":["file_path"],"additionalProperties":false}`,
		call: (*Tool).read,
	},
	Write: {
		description: "Write a file in the workspace, replacing it if it exists; missing folders are created. A path is " +
			"relative to the workspace, or absolute inside it.",
		params: `{"type":"object","properties":{` +
			`"file_path":{"type":"string","description":"The file: relative to the workspace, or absolute inside it."},` +
			`"content":{"type":"string","description":"The whole content of the file."}},` +
			`"required":["file_path","content"],"additionalProperties":false}`,
		effect: true,
		call:   (*Tool).write,
	},
	Edit: {
		description: "Replace exact text in a file of the workspace. old_string must occur exactly once (give enough " +
			"surrounding text to make it unique) unless replace_all is true, which replaces every occurrence.",
		params: `{"type":"object","properties":{` +
			`"file_path":{"type":"string","description":"The file: relative to the workspace, or absolute inside it."},` +
			`"old_string":{"type":"string","description":"The exact text to replace."},` +
			`"new_string":{"type":"string","description":"The text to put in its place."},` +
			`"replace_all":{"type":"boolean","description":"Replace every occurrence (default false)."}},` +
			`"required":["file_path","old_string","new_string"],"additionalProperties":false}`,
		effect: true,
		call:   (*Tool).edit,
	},
	Glob: {
		description: "List files whose path matches a glob pattern (* and ? within a name, ** across folders, e.g. " +
			"**/*.py), relative to the workspace or to path, sorted, at most 1000.",
		params: `{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"The glob, e.g. **/*.md or src/*.go."},` +
			`"path":{"type":"string","description":"The folder to search (default: the workspace)."}},` +
			`"required":["pattern"],"additionalProperties":false}`,
		call: (*Tool).glob,
	},
	Grep: {
		description: "Search file contents with a regular expression (RE2 syntax) in a file or folder (default: the " +
			"workspace). output_mode files_with_matches (default) lists the files, content shows the matching lines, " +
			"count counts them per file. Binary files and files over 10 MiB are skipped.",
		params: `{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"The regular expression (RE2)."},` +
			`"path":{"type":"string","description":"The file or folder to search (default: the workspace)."},` +
			`"glob":{"type":"string","description":"Only files matching this glob, e.g. *.py or **/*.md."},` +
			`"output_mode":{"type":"string","enum":["content","files_with_matches","count"],"description":"What to return (default files_with_matches)."},` +
			`"-i":{"type":"boolean","description":"Case-insensitive."},` +
			`"-n":{"type":"boolean","description":"Line numbers in content mode (default true)."},` +
			`"head_limit":{"type":"integer","minimum":1,"description":"Return at most this many lines or files."}},` +
			`"required":["pattern"],"additionalProperties":false}`,
		call: (*Tool).grep,
	},
}

// inputs are the built-ins' input schemas, each compiled when its tool is
// first called: offering a tool needs only its schema's JSON (params),
// and a compile costs more than most calls (the library checks the
// schema against the 2020-12 meta-schema) (Z6).
var inputs = sync.OnceValue(func() map[string]func() *tool.Input {
	m := make(map[string]func() *tool.Input, len(builtins))
	for name, b := range builtins {
		m[name] = sync.OnceValue(func() *tool.Input {
			in, err := tool.CompileInput(name, json.RawMessage(b.params))
			if err != nil {
				panic(fmt.Sprintf("workspace: %s's schema: %v", name, err)) // a constant: TestDefs compiles it
			}
			return in
		})
	}
	return m
})

// params are the built-ins' input schemas as offered to the model: the
// JSON CompileInput keeps (Input.Params), without compiling.
var params = sync.OnceValue(func() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(builtins))
	for name, b := range builtins {
		m[name], _ = json.Marshal(json.RawMessage(b.params))
	}
	return m
})

// Known reports whether name is a built-in tool.
func Known(name string) bool {
	_, ok := builtins[name]
	return ok
}

// Effect reports whether a built-in changes something outside fsd: Bash,
// Write and Edit. A resume uses such a call's journaled result instead of
// making it again, and it follows the workflow's approve: policy.
func Effect(name string) bool { return builtins[name].effect }

// Def is the built-in tool name as offered to the model.
func Def(name string) model.ToolDef {
	b := builtins[name]
	return model.ToolDef{Name: name, Description: b.description, Parameters: params()[name]}
}

// Names are the built-in tools' names, in the order a request lists them.
func Names() []string { return slices.Clone(spec.WorkspaceTools) }

// Tool is one built-in tool bound to a workspace, as a generator calls
// it. It is safe for concurrent use.
type Tool struct {
	name string
	ws   *Workspace
	// readOnly lists the folders besides the workspace that Read, Glob
	// and Grep may read (the loaded skills'), asked at each call.
	readOnly func() []string
	opts     []tool.Option
	// mask cleans secrets from a line before Read or Grep cuts it: once
	// cut, a secret's part is no longer recognised (nil: none).
	mask func(string) string
}

// NewTool binds the built-in name to ws. readOnly (nil: none) names the
// folders the reading tools may read besides the workspace; opts apply
// to Bash's program as to a command tool's (tool.WithMask, the
// environment).
func NewTool(name string, ws *Workspace, readOnly func() []string, opts ...tool.Option) (*Tool, error) {
	if !Known(name) {
		return nil, fmt.Errorf("no built-in tool %q", name)
	}
	if readOnly == nil {
		readOnly = func() []string { return nil }
	}
	return &Tool{name: name, ws: ws, readOnly: readOnly, opts: opts, mask: tool.MaskOf(opts...)}, nil
}

// Name is the tool's name.
func (t *Tool) Name() string { return t.name }

// Def is the tool as offered to the model.
func (t *Tool) Def() model.ToolDef { return Def(t.name) }

// Effect reports whether the tool changes something (see Effect).
func (t *Tool) Effect() bool { return Effect(t.name) }

// Call runs the tool with args (a JSON object). A problem — bad
// arguments, a path outside the workspace, a missing file — is a Result
// marked IsError in words the model can act on.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) tool.Result {
	if t.ws == nil {
		return failf("%s cannot run: the run has no workspace open", t.name)
	}
	m, res, ok := inputs()[t.name]().Decode(args)
	if !ok {
		return res
	}
	// Checked and whole: the form each tool reads its arguments from.
	checked, _ := json.Marshal(m)
	return builtins[t.name].call(t, ctx, checked)
}

// decode reads checked arguments into v.
func decode(args json.RawMessage, v any) *tool.Result {
	if err := json.Unmarshal(args, v); err != nil {
		r := failf("arguments: %v", err)
		return &r
	}
	return nil
}

func failf(format string, args ...any) tool.Result {
	return tool.Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

func fail(err error) tool.Result { return tool.Result{Text: err.Error(), IsError: true} }
