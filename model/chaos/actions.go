package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/fsdrun/fsd/model"
)

// actor draws the calls of one response.
type actor struct {
	r      *rand.Rand
	o      *Options
	k      *knowledge
	worker bool
}

// kind is one family of actions with its weight.
type kind struct {
	weight int
	do     func(a *actor) []model.ToolCall
}

// kinds are the actions of a generator with their weights. A host with
// nothing loaded mostly reads skills, and one with board tools uses them
// often: a model that never gets a task onto the board would leave the
// board's invariants untested. Workers, which have no read_skill, board or
// reader tools, call those anyway as unknown tools.
func (a *actor) kinds() []kind {
	if a.worker {
		return []kind{
			{60, (*actor).offered},
			{10, (*actor).unknown},
			{10, (*actor).stale},
			{20, (*actor).badArgs},
		}
	}
	read, board := 14, 6
	switch {
	case len(a.k.tools) <= 1:
		read = 45
	case a.k.offered["addTask"]:
		read, board = 6, 40
	}
	return []kind{
		{30, (*actor).offered},
		{read, (*actor).readSkill},
		{12, (*actor).reader},
		{board, (*actor).board},
		{5, (*actor).unknown},
		{5, (*actor).stale},
		{12, (*actor).badArgs},
	}
}

func (a *actor) action() []model.ToolCall {
	kinds := a.kinds()
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	n := a.r.IntN(total)
	for _, k := range kinds {
		if n < k.weight {
			return k.do(a)
		}
		n -= k.weight
	}
	return nil
}

func (a *actor) pick(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[a.r.IntN(len(list))]
}

func (a *actor) chance(p float64) bool { return a.r.Float64() < p }

func call(name string, args any) []model.ToolCall {
	return []model.ToolCall{{Name: name, Args: mustJSON(args)}}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value built here is plain data; keep going with an object.
		return json.RawMessage(`{}`)
	}
	return b
}

// offered calls a tool of the request with arguments drawn from its schema.
func (a *actor) offered() []model.ToolCall {
	if len(a.k.tools) == 0 {
		return a.unknown()
	}
	t := a.k.tools[a.r.IntN(len(a.k.tools))]
	switch t.Name {
	case "read_skill":
		return a.readSkill()
	case "addTask", "listTasks", "cancelTask", "runBoard":
		return a.board()
	}
	if a.isReader(t.Name) {
		return a.readerCall(t)
	}
	return call(t.Name, a.fromSchema(t.Parameters))
}

var malformedIDs = []string{
	"", "Bad ID", "UPPER", "a--b", "-lead", "trail-", "ünï", "../etc/passwd",
	strings.Repeat("a", 65), "a_b", "id\n", "x/y",
}

// readSkill reads an enabled id, an extra (disabled) id, an id of valid
// form that names nothing, or a malformed id.
func (a *actor) readSkill() []model.ToolCall {
	var id string
	switch p := a.r.IntN(100); {
	case p < 65 && len(a.k.catalog) > 0:
		id = a.pick(a.k.catalog)
	case p < 80 && len(a.o.ExtraIDs) > 0:
		id = a.pick(a.o.ExtraIDs)
	case p < 88:
		id = fmt.Sprintf("no-such-skill-%d", a.r.IntN(5))
	default:
		id = a.pick(malformedIDs)
	}
	if a.chance(0.05) {
		return call("read_skill", map[string]any{"id": id, "extra": true})
	}
	return call("read_skill", map[string]string{"id": id})
}

// handle picks a handle: a loaded skill's, a stale one from a receipt, a
// forged one, or garbage.
func (a *actor) handle() string {
	switch p := a.r.IntN(100); {
	case p < 50 && len(a.k.current) > 0:
		return a.pick(a.k.current)
	case p < 72 && len(a.k.seen) > 0:
		return a.pick(a.k.seen)
	case p < 80 && len(a.k.seen) > 0:
		// One hex digit off a real handle.
		h := []byte(a.pick(a.k.seen))
		i := len(h) - 1 - a.r.IntN(4)
		h[i] = "0123456789abcdef"[a.r.IntN(16)]
		return string(h)
	case p < 92:
		return fmt.Sprintf("h_%016x%016x", a.r.Uint64(), a.r.Uint64())
	default:
		return a.pick([]string{"", "h_", "not-a-handle", "../../etc/passwd", strings.Repeat("h", 300)})
	}
}

// reader calls a reader tool, offered or not.
func (a *actor) reader() []model.ToolCall {
	for _, t := range a.k.tools {
		if a.isReader(t.Name) && a.chance(0.15) {
			return a.readerCall(t)
		}
	}
	if len(a.o.Readers) == 0 {
		return a.unknown()
	}
	t := a.o.Readers[a.r.IntN(len(a.o.Readers))]
	return call(t.Name, map[string]any{"handle": a.handle(), "get": a.pick(append(getValues(t), badGets...))})
}

// badGets are selector values no reader has.
var badGets = []string{"", "everything"}

func (a *actor) isReader(name string) bool {
	return slices.ContainsFunc(a.o.Readers, func(t model.ToolDef) bool { return t.Name == name })
}

// getValues are the get values a reader's schema lists.
func getValues(t model.ToolDef) []string {
	var s struct {
		Properties struct {
			Get struct {
				Enum []string `json:"enum"`
			} `json:"get"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(t.Parameters, &s) // a schema without them lists none
	return s.Properties.Get.Enum
}

func (a *actor) readerCall(t model.ToolDef) []model.ToolCall {
	args, ok := a.fromSchema(t.Parameters).(map[string]any)
	if !ok {
		args = map[string]any{}
	}
	args["handle"] = a.handle()
	if a.chance(0.85) {
		delete(args, "path")
	}
	if a.chance(0.8) {
		// The schema offers every get's arguments at once; a call
		// mostly passes only its get's, as a model reading the
		// description would, so most calls read rather than fail.
		for k := range args {
			if k != "get" && k != "handle" && k != "path" {
				delete(args, k)
			}
		}
		switch args["get"] {
		case "section":
			args["heading"] = a.value("heading", nil, 0)
		case "grep":
			args["pattern"] = a.value("pattern", nil, 0)
		}
	}
	return call(t.Name, args)
}

// board calls a board tool: addTask in its many shapes, a two-task
// cycle, runBoard, listTasks or cancelTask of a random id.
func (a *actor) board() []model.ToolCall {
	switch p := a.r.IntN(100); {
	case p < 45:
		return call("addTask", a.taskSpec())
	case p < 53:
		// Two tasks that depend on each other, in one response.
		x, y := fmt.Sprintf("cyc%d", a.r.IntN(3)), fmt.Sprintf("cyc%d", 3+a.r.IntN(3))
		return append(call("addTask", map[string]any{"id": x, "goal": "cycle " + x, "deps": []string{y}}),
			call("addTask", map[string]any{"id": y, "goal": "cycle " + y, "deps": []string{x}})...)
	case p < 75:
		return call("runBoard", a.emptyArgs())
	case p < 85:
		return call("listTasks", a.emptyArgs())
	default:
		id := a.pick(a.k.tasks)
		if id == "" || a.chance(0.3) {
			id = a.pick([]string{"t1", "t99", "ghost", "", "cyc0"})
		}
		return call("cancelTask", map[string]string{"id": id})
	}
}

func (a *actor) emptyArgs() any {
	switch a.r.IntN(10) {
	case 0:
		return nil
	case 1:
		return map[string]any{"force": true}
	}
	return map[string]any{}
}

// taskSpec draws addTask arguments: a task the board accepts more than
// half the time (so workers run), else one with a single defect.
func (a *actor) taskSpec() map[string]any {
	s := map[string]any{"goal": fmt.Sprintf("chaos goal %d", a.r.IntN(1000))}
	if a.chance(0.5) {
		s["id"] = fmt.Sprintf("c%d", a.r.IntN(20))
	}
	if names := append(slices.Clip(a.k.roster), a.o.Assignees...); len(names) > 0 && a.chance(0.7) {
		s["assignee"] = a.pick(names)
	}
	if len(a.k.tasks) > 0 && a.chance(0.5) {
		deps := []string{a.pick(a.k.tasks)}
		if a.chance(0.3) {
			deps = append(deps, a.pick(a.k.tasks))
		}
		s["deps"] = deps
	}
	if a.chance(0.3) {
		s["input"] = a.word()
	}
	if a.chance(0.55) {
		return s
	}
	switch a.r.IntN(8) {
	case 0:
		if id := a.pick(a.k.tasks); id != "" {
			s["id"] = id // a duplicate
		}
	case 1:
		s["id"] = a.pick([]string{"has space", "tab\tid", strings.Repeat("x", 129)})
	case 2:
		delete(s, "goal")
	case 3:
		s["assignee"] = a.pick([]string{"nobody", "ghost/agent", "hidden/x", "/", ""})
	case 4:
		s["assignee"] = 42
	case 5:
		s["deps"] = append([]string{"ghost"}, a.k.tasks...)
	case 6:
		id := fmt.Sprintf("self%d", a.r.IntN(3))
		s["id"], s["deps"] = id, []string{id}
	default:
		s["deps"] = "t1" // not an array
	}
	return s
}

// unknown calls a tool that is not offered: a made-up name, or one of the
// host's tools from a worker.
func (a *actor) unknown() []model.ToolCall {
	name := a.pick([]string{"no_such_tool", "read_skill", "runBoard", "addTask", "artifact_read", "", "bash", "ünï tool", strings.Repeat("t", 200)})
	if name != "" && a.k.offered[name] {
		name += "_not"
	}
	return call(name, map[string]any{"x": a.word()})
}

// stale calls a tool called earlier in the window that is not offered
// now: typically a tool of a skill that was unloaded since.
func (a *actor) stale() []model.ToolCall {
	var gone []string
	for _, n := range a.k.called {
		if !a.k.offered[n] {
			gone = append(gone, n)
		}
	}
	if len(gone) == 0 {
		return a.unknown()
	}
	return call(a.pick(gone), map[string]any{"text": a.word(), "key": "k1", "value": "v"})
}

// badArgs calls an offered tool with arguments its schema rejects.
func (a *actor) badArgs() []model.ToolCall {
	if len(a.k.tools) == 0 {
		return a.unknown()
	}
	t := a.k.tools[a.r.IntN(len(a.k.tools))]
	var raw json.RawMessage
	switch p := a.r.IntN(100); {
	case a.chance(a.o.HugeRate):
		raw = mustJSON(a.huge(t))
	case p < 35:
		raw = mustJSON(a.wrongTypes(t))
	case p < 50:
		raw = json.RawMessage(`{}`)
	case p < 75:
		raw = json.RawMessage(a.pick([]string{`[1,2,3]`, `"text"`, `42`, `null`, `true`, `[]`, `{"a":{"b":{"c":[[[[{}]]]]}}}`}))
	default:
		bad := a.pick([]string{`{"a":`, `not json`, `{"a":1}{"b":2}`, `{'a': 1}`, "\x00\xff", `{"text": "\u00"}`})
		if a.o.RawJSON {
			raw = json.RawMessage(bad)
		} else {
			raw = mustJSON(bad) // as a provider wraps broken JSON
		}
	}
	return []model.ToolCall{{Name: t.Name, Args: raw}}
}

// hugeText is the one huge string of size n; see Options.HugeBytes.
func hugeText(n int) string {
	const unit = "chaos huge argument "
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

// huge sends one huge string in one field and nothing else, so the
// arguments are the same bytes every time a tool gets them: a process
// running thousands of seeds stores and tokenizes each only once.
func (a *actor) huge(t model.ToolDef) map[string]any {
	field := "text"
	if keys := sortedKeys(props(t.Parameters)); len(keys) > 0 {
		field = keys[a.r.IntN(len(keys))]
	}
	return map[string]any{field: hugeText(a.o.HugeBytes)}
}

func (a *actor) wrongTypes(t model.ToolDef) map[string]any {
	out := map[string]any{}
	ps := props(t.Parameters)
	for _, k := range sortedKeys(ps) {
		switch typeOf(ps[k]) {
		case "string":
			out[k] = 12345
		case "integer", "number":
			out[k] = "not a number"
		case "boolean":
			out[k] = "yes"
		case "array":
			out[k] = map[string]any{"not": "an array"}
		default:
			out[k] = []any{1, "two", nil}
		}
	}
	if len(out) == 0 {
		out["unexpected"] = []any{nil}
	}
	return out
}

var words = []string{
	"alpha", "beta", "Steps", "", "ünïcödé ✓", "<b>&amp;</b>", "{{.text}}", "$(rm -rf /)", "%s%n%x",
	"../../etc/passwd", "line one\nline two", `"quoted"`, "null",
}

func (a *actor) word() string {
	if a.chance(0.05) {
		return strings.Repeat("long ", 200)
	}
	return a.pick(words)
}
