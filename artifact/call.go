package artifact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// args holds the arguments of every reader; each reader reads its own.
// Pointers tell an absent argument from a zero one.
type args struct {
	Handle     string  `json:"handle"`
	Path       string  `json:"path"`
	Lines      *int    `json:"lines"`
	Pattern    *string `json:"pattern"`
	Context    int     `json:"context"`
	IgnoreCase bool    `json:"ignore_case"`
	Offset     int     `json:"offset"`
	Limit      *int    `json:"limit"`
	Heading    *string `json:"heading"`
	Occurrence int     `json:"occurrence"`
	Language   string  `json:"language"`
	Index      int     `json:"index"`
	Depth      *int    `json:"depth"`
	// named says the call came through the named surface, whose tool
	// names the answers' notes use.
	named bool
}

// Call runs the reader tool name with the model's JSON arguments: a
// compact tool (ToolMD or ToolRead), whose get selects the operation, or a
// tool of the named surface (NamedTools), which is one.
// loaded reports whether a skill is loaded now: a handle of a skill that
// is not loaded (or of no skill) is an error, like an unknown one (H2). A
// kept tool result that is work (KeepResult) is readable at any time.
//
// skillID is the skill whose artifact the call read, set whenever the
// handle named a loaded skill's artifact, error or not, so the engine can
// reclaim the result when that skill unloads (H4). Errors are written for
// the model: it reads them and corrects its call. Call never panics.
func (s *Store) Call(name string, raw json.RawMessage, loaded func(skillID string) bool) (text, skillID string, err error) {
	defer func() {
		if p := recover(); p != nil {
			// A reader bug must not take the run down; the model gets an
			// error and the fuzz target catches the bug.
			text, err = "", fmt.Errorf("internal error in %s: %v", name, p)
		}
	}()
	if !IsReader(name) {
		return "", "", fmt.Errorf("unknown reader tool %q; the readers are %s and %s", clip(name, 40), ToolMD, ToolRead)
	}
	o, a, err := parseArgs(name, raw)
	if err != nil {
		return "", "", err
	}
	label := o.label(a.named)
	s.mu.Lock()
	e, ok := s.byHandle[a.Handle]
	s.mu.Unlock()
	if !ok || !e.work && (loaded == nil || !loaded(e.skillID)) {
		// Unknown and unloaded handles get the same answer: an error must
		// not tell a guesser which handles exist.
		return "", "", fmt.Errorf("handle %q does not name an artifact of a loaded skill; read_skill it again", clip(a.Handle, 40))
	}
	<-e.ready
	d := e.body
	if a.Path != "" {
		if d, err = s.open(e, a.Path); err != nil {
			return "", e.skillID, fmt.Errorf("%s: %w", label, err)
		}
	}
	if o.tool == ToolMD && d.md == nil {
		if a.named {
			return "", e.skillID, fmt.Errorf("%s reads markdown, and %s is not markdown; use %s, %s or %s", o.named, d.name, a.call("head"), a.call("grep"), a.call("cat"))
		}
		return "", e.skillID, fmt.Errorf("%s reads markdown, and %s is not markdown; use %s (get head, grep or cat)", ToolMD, d.name, ToolRead)
	}
	out, err := o.run(d, a)
	if err != nil {
		return "", e.skillID, fmt.Errorf("%s: %w", label, err)
	}
	return out, e.skillID, nil
}

// parseArgs decodes raw into args for the operation tool is (a named
// tool) or its get selects (a compact one), accepting only that
// operation's arguments, and turns decoding errors into sentences naming
// the argument. Its errors name the tool, and the operation once known.
func parseArgs(tool string, raw json.RawMessage) (*op, *args, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if len(raw) > maxArgsBytes {
		return nil, nil, fmt.Errorf("%s: arguments are %d bytes, more than the %d allowed", tool, len(raw), maxArgsBytes)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, nil, fmt.Errorf("%s: arguments must be a JSON object", tool)
	}
	o, named := findNamed(tool), true
	if o == nil {
		var err error
		named = false
		if o, err = selectOp(tool, fields["get"]); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", tool, err)
		}
	}
	label := o.label(named)
	allowed := map[string]bool{"handle": true, "path": true, "get": !named}
	for _, p := range o.params {
		allowed[p.name] = true
	}
	var unknown []string
	for k := range fields {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, 0, len(allowed))
		for k, ok := range allowed {
			if ok {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		of := fmt.Sprintf("get %q", o.get)
		if named {
			of = o.named
		}
		return nil, nil, fmt.Errorf("%s: unknown argument %s; arguments of %s are: %s", label, quoteAll(unknown), of, strings.Join(names, ", "))
	}
	a := &args{named: named}
	if err := json.Unmarshal(raw, a); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			t := te.Type
			if t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			return nil, nil, fmt.Errorf("%s: argument %q must be %s, not %s", label, te.Field, jsonType(t.Kind().String()), te.Value)
		}
		return nil, nil, fmt.Errorf("%s: arguments must be a JSON object", label)
	}
	if a.Handle == "" {
		return nil, nil, fmt.Errorf(`%s: argument "handle" is required: the h_… handle of a loaded skill or a kept result`, label)
	}
	for _, req := range o.required {
		if _, ok := fields[req]; !ok {
			return nil, nil, fmt.Errorf("%s: argument %q is required", label, req)
		}
	}
	return o, a, nil
}

// selectOp finds the operation raw (the get argument) names in tool. A
// get of the other reader tool says which tool has it.
func selectOp(tool string, raw json.RawMessage) (*op, error) {
	if raw == nil {
		return nil, fmt.Errorf("argument \"get\" is required: one of %s", gets(tool))
	}
	var get string
	if err := json.Unmarshal(raw, &get); err != nil {
		return nil, fmt.Errorf("argument \"get\" must be a string: one of %s", gets(tool))
	}
	if o := findOp(tool, get); o != nil {
		return o, nil
	}
	for _, other := range []string{ToolMD, ToolRead} {
		if other != tool && findOp(other, get) != nil {
			return nil, fmt.Errorf("get %q is a get of %s; %s gets %s", get, other, tool, gets(tool))
		}
	}
	return nil, fmt.Errorf("get %q is not one of %s", clip(get, 40), gets(tool))
}

func jsonType(kind string) string {
	switch kind {
	case "int", "int64":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return "a " + kind
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", clip(s, 40))
	}
	return strings.Join(q, ", ")
}

// clip cuts s to n bytes for quoting in an error, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return validPrefix(s, n) + "…"
}
