package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/internal/sandbox"
	"github.com/fsdrun/fsd/internal/tmpl"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/output"
	"github.com/fsdrun/fsd/spec"
)

// Limits of a call, stated to the model when they bite.
const (
	DefaultTimeout = spec.DefaultCommandTimeout
	MaxArgsBytes   = 1 << 20 // arguments larger than this are refused
	MaxOutputBytes = 1 << 20 // stdout beyond this is dropped and marked
	StderrTail     = 4 << 10 // how much of stderr's end a failure shows
)

// Result is what the model reads back from one call.
type Result struct {
	Text    string
	IsError bool
	// Truncated says stdout went past MaxOutputBytes; Text says so too.
	Truncated bool
}

func errorf(format string, args ...any) Result {
	return Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

// KV is where state and store tools keep values. The engine passes the
// skill's per-load state or the run-wide store (L4). Implementations must
// be safe for concurrent use.
type KV interface {
	Get(k string) (string, bool)
	Set(k, v string)
	Delete(k string)
}

// Option configures Compile.
type Option func(*Tool)

// WithTrust says whether the tool's skill is trusted to run commands. An
// untrusted skill's command tool answers every call with a refusal; its
// other tools work. The default is trusted.
func WithTrust(trusted bool) Option { return func(t *Tool) { t.trusted = trusted } }

// WithSkill names the tool's skill, so an untrusted skill's refusal says
// which skill to trust.
func WithSkill(id string) Option { return func(t *Tool) { t.skill = id } }

// WithRefusal replaces the advice of an untrusted skill's refusal (by
// default: run fsd with --trust FOLDER); a worker, whose skills come from
// elsewhere, says what its own trust rule is.
func WithRefusal(advice string) Option { return func(t *Tool) { t.advice = advice } }

// WithMask sets how a command's output is cleaned of secrets (a run's
// redact set): it is applied before the output is cut to its caps, so a
// secret the cut would split is masked whole, not left in part.
func WithMask(f func(string) string) Option { return func(t *Tool) { t.mask = f } }

// MaskOf is the mask opts set with WithMask, or nil: for a tool of
// another package that cuts text it returns (the workspace's Read and
// Grep cut long lines), and so must mask before its cut as a command does.
func MaskOf(opts ...Option) func(string) string {
	var t Tool
	for _, o := range opts {
		o(&t)
	}
	return t.mask
}

// WithWorkspace sets the run's workspace: the working folder of the
// programs the tool starts ("" is the skill's folder). A program named by
// a relative path is still the skill's.
func WithWorkspace(dir string) Option { return func(t *Tool) { t.work = dir } }

// WithLookupEnv sets where a command's environment comes from (default
// os.LookupEnv); tests use it to pin the environment.
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(t *Tool) { t.lookupEnv = f }
}

// WithSandbox sets the sandbox a command or script runs in (the engine's
// spec.SandboxFor with the run's workspace). Nil runs it unconfined:
// only a workflow's `sandbox: off` asks for that. Without this option a
// program runs in the default sandbox: no network, writes only to its
// private /tmp, its skill's folder readable.
func WithSandbox(p *sandbox.Policy) Option {
	return func(t *Tool) { t.sandbox, t.sandboxSet = p, true }
}

// WithReadable adds folders the program's sandbox lets it read, besides
// what WithSandbox's policy names: the loaded skills' folders, for a
// shell command that runs their scripts.
func WithReadable(dirs ...string) Option {
	return func(t *Tool) { t.readable = append(t.readable, dirs...) }
}

// WithWrap replaces how the sandbox is applied (sandbox.Wrap); tests pass
// one that fails, to see a machine without a sandbox.
func WithWrap(w proc.Wrap) Option { return func(t *Tool) { t.wrap = w } }

// Tool is a compiled skill tool, ready to call concurrently.
type Tool struct {
	name, description string
	kind              spec.RunKind
	input             *Input

	dir       string
	work      string // the working folder of its programs; "" is dir
	merged    bool   // stderr goes with stdout (the Bash tool)
	argv      []*tmpl.Template
	timeout   time.Duration
	env       []string
	set       []string // NAME=value pairs besides the call's ids (a module's PYTHONPATH)
	reply     *tmpl.Template
	op        string
	trusted   bool
	skill     string
	advice    string
	onInt     spec.OnInterrupt
	lookupEnv func(string) (string, bool)
	mask      func(string) string
	// sandbox confines the tool's program; nil with sandboxSet is
	// unconfined, unset is the default sandbox (see WithSandbox).
	sandbox    *sandbox.Policy
	sandboxSet bool
	readable   []string // more folders the sandbox lets it read
	wrap       proc.Wrap
}

// policy is the sandbox a call runs in: the tool's, with the folders
// WithReadable added; nil is unconfined.
func (c *Tool) policy() *sandbox.Policy {
	if c.sandbox == nil || len(c.readable) == 0 {
		return c.sandbox
	}
	p := *c.sandbox
	p.Read = append(slices.Clone(p.Read), c.readable...)
	return &p
}

// confine fills in the default sandbox when no WithSandbox was given, once
// dir is absolute.
func (c *Tool) confine() {
	if !c.sandboxSet {
		c.sandbox = &sandbox.Policy{Network: sandbox.NetOff, Read: []string{c.dir}}
		c.sandboxSet = true
	}
}

// Compile prepares t for calls: it compiles the input schema (nil means
// any object; for state and store tools, the {key, value} they take) and
// parses every template once. dir is the skill's folder: the base of a
// relative argv[0], given to the program as SKILL_DIR, and its working
// folder unless WithWorkspace names another.
func Compile(t spec.Tool, dir string, opts ...Option) (*Tool, error) {
	c := &Tool{
		name: t.Name, description: t.Description, kind: t.Run.Kind,
		dir: dir, timeout: t.Run.Timeout, env: t.Run.Env, op: t.Run.Op,
		trusted: true, lookupEnv: os.LookupEnv, onInt: t.Run.OnInterrupt,
	}
	for _, o := range opts {
		o(c)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		// A relative argv[0] is joined to dir and exec'd from dir: an
		// absolute dir keeps it from being resolved twice.
		c.dir = abs
	}
	c.set = append(c.set, "SKILL_DIR="+c.dir)
	c.confine()
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if err := c.compileSchema(t.Input); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	switch c.kind {
	case spec.RunCommand:
		if len(t.Run.Command) == 0 {
			return nil, fmt.Errorf("tool %s: command is empty", t.Name)
		}
		for i, a := range t.Run.Command {
			tm, err := parse(fmt.Sprintf("argv[%d]", i), a)
			if err != nil {
				return nil, fmt.Errorf("tool %s: command: %w", t.Name, err)
			}
			c.argv = append(c.argv, tm)
		}
	case spec.RunReply:
		tm, err := parse("reply", t.Run.Reply)
		if err != nil {
			return nil, fmt.Errorf("tool %s: reply: %w", t.Name, err)
		}
		c.reply = tm
	case spec.RunState, spec.RunStore:
		switch c.op {
		case "get", "set", "delete":
		default:
			return nil, fmt.Errorf("tool %s: %s op %q: want get, set or delete", t.Name, c.kind, c.op)
		}
	default:
		return nil, fmt.Errorf("tool %s: run kind %q: want command, reply, state or store", t.Name, c.kind)
	}
	return c, nil
}

// funcs are the functions a tool template may call besides the built-in
// ones: json renders a value as JSON, for arguments that are not strings
// or numbers.
var funcs = map[string]tmpl.Func{
	"json": func(a ...any) (any, error) {
		if len(a) != 1 {
			return nil, fmt.Errorf("json takes one argument, got %d", len(a))
		}
		b, err := json.Marshal(a[0])
		return string(b), err
	},
}

func parse(name, text string) (*tmpl.Template, error) {
	return tmpl.Parse(name, text, funcs)
}

func (c *Tool) compileSchema(input map[string]any) error {
	var doc any = input
	if input == nil {
		doc = map[string]any{"type": "object"}
		if c.kind == spec.RunState || c.kind == spec.RunStore {
			doc = kvSchema(c.op)
		}
	}
	in, err := CompileInput(c.name, doc)
	if err != nil {
		return err
	}
	c.input = in
	return nil
}

func kvSchema(op string) map[string]any {
	s := map[string]any{
		"type":       "object",
		"properties": map[string]any{"key": map[string]any{"type": "string"}},
		"required":   []any{"key"},
	}
	if op == "set" {
		s["properties"].(map[string]any)["value"] = map[string]any{}
		s["required"] = []any{"key", "value"}
	}
	return s
}

// FailsInDoubt reports whether a call of this command that was in flight
// when its run stopped must not run again on resume (on-interrupt: fail).
func (c *Tool) FailsInDoubt() bool { return c.onInt == spec.OnInterruptFail }

// Name is the tool's name.
func (c *Tool) Name() string { return c.name }

// Def is the tool as offered to the model.
func (c *Tool) Def() model.ToolDef {
	d := c.description
	if c.kind == spec.RunCommand && c.work != "" {
		// The model names files in the arguments: say where they are.
		d = strings.TrimSpace(d + " " + WorkspaceNote)
	}
	return model.ToolDef{Name: c.name, Description: d, Parameters: c.input.Params()}
}

// WorkspaceNote ends a command tool's description when the run has a
// workspace: the model names files in its arguments, and they are the
// workspace's.
const WorkspaceNote = "(Runs in the workspace: relative paths are files there.)"

// Call runs the tool with args (a JSON object) and returns what the model
// reads. kv is used by state and store tools only. ctx cancels a running
// command.
//
// T3: an untrusted skill's command starts no process.
func (c *Tool) Call(ctx context.Context, args json.RawMessage, kv KV) Result {
	if c.Refuses() {
		return c.refusal()
	}
	in, res, ok := c.decode(args)
	if !ok {
		return res
	}
	switch c.kind {
	case spec.RunCommand:
		return c.runCommand(ctx, in)
	case spec.RunReply:
		text, err := c.reply.Execute(in)
		if err != nil {
			return errorf("reply: %s", templateError(err))
		}
		return Result{Text: text}
	default:
		return c.kvOp(in, kv)
	}
}

// Refuses reports whether a call would answer the untrusted skill's
// refusal without running anything: a command tool of a skill not
// trusted. Such a call needs no approval.
func (c *Tool) Refuses() bool { return c.kind == spec.RunCommand && !c.trusted }

// refusal answers a command tool of an untrusted skill. It names the
// folder to trust: the model can tell the user exactly what to do, and a
// user reading the events sees it too.
func (c *Tool) refusal() Result {
	of := ""
	if c.skill != "" {
		of = " of skill " + c.skill
	}
	if c.advice != "" {
		return errorf("tool %s%s did not run: %s", c.name, of, c.advice)
	}
	return errorf("tool %s%s did not run: the skill's folder %s is not trusted to run commands. "+
		"Only skills under the workflow's folder or a --trust folder may; to allow this one, run fsd with --trust %s",
		c.name, of, c.dir, c.dir)
}

// decode checks args: see Input.Decode.
func (c *Tool) decode(args json.RawMessage) (map[string]any, Result, bool) {
	return c.input.Decode(args)
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

// violations lists a validation error's leaves, one a line, each with
// where in the arguments it is (output.Violations, as typed answers get
// them).
func violations(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "invalid arguments: " + err.Error()
	}
	return "invalid arguments:\n- " + strings.Join(output.Violations(err), "\n- ")
}

// templateError strips the template's position prefix down to the cause,
// which is what the model can fix (usually a missing argument).
func templateError(err error) string {
	var mk *tmpl.MissingKeyError
	if errors.As(err, &mk) {
		return fmt.Sprintf("missing argument %q", mk.Key)
	}
	var ee *tmpl.ExecError
	if errors.As(err, &ee) {
		return ee.Err.Error()
	}
	return err.Error()
}

func (c *Tool) kvOp(in map[string]any, kv KV) Result {
	if kv == nil {
		return errorf("tool %s has no %s to use", c.name, c.kind)
	}
	key, ok := in["key"].(string)
	if !ok || key == "" {
		return errorf(`argument "key" must be a non-empty string`)
	}
	switch c.op {
	case "get":
		if v, ok := kv.Get(key); ok {
			return Result{Text: v}
		}
		return Result{Text: fmt.Sprintf("%q is unset", key)}
	case "set":
		v, present := in["value"]
		if !present {
			return errorf(`argument "value" is required to set %q`, key)
		}
		s, isString := v.(string)
		if !isString {
			b, err := json.Marshal(v)
			if err != nil {
				return errorf("value: %v", err)
			}
			s = string(b)
		}
		kv.Set(key, s)
		return Result{Text: fmt.Sprintf("%q set", key)}
	default: // delete
		if _, ok := kv.Get(key); !ok {
			return Result{Text: fmt.Sprintf("%q was already unset", key)}
		}
		kv.Delete(key)
		return Result{Text: fmt.Sprintf("%q deleted", key)}
	}
}
