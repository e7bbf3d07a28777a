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
}

// Call runs the reader tool name with the model's JSON arguments.
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
	r := findReader(name)
	if r == nil {
		return "", "", fmt.Errorf("unknown reader tool %q", name)
	}
	a, err := parseArgs(r, raw)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", name, err)
	}
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
			return "", e.skillID, fmt.Errorf("%s: %w", name, err)
		}
	}
	if r.markdown && d.md == nil {
		return "", e.skillID, fmt.Errorf("%s reads markdown, and %s is not markdown; use artifact_head, artifact_grep or artifact_cat", name, d.name)
	}
	out, err := r.run(d, a)
	if err != nil {
		return "", e.skillID, fmt.Errorf("%s: %w", name, err)
	}
	return out, e.skillID, nil
}

// parseArgs decodes raw into args, accepting only r's parameters, and
// turns decoding errors into sentences naming the argument.
func parseArgs(r *reader, raw json.RawMessage) (*args, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if len(raw) > maxArgsBytes {
		return nil, fmt.Errorf("arguments are %d bytes, more than the %d allowed", len(raw), maxArgsBytes)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, errors.New("arguments must be a JSON object")
	}
	allowed := map[string]bool{"handle": true, "path": true}
	for _, p := range r.params {
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
		for k := range allowed {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown argument %s; arguments are: %s", quoteAll(unknown), strings.Join(names, ", "))
	}
	a := &args{}
	if err := json.Unmarshal(raw, a); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			t := te.Type
			if t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			return nil, fmt.Errorf("argument %q must be %s, not %s", te.Field, jsonType(t.Kind().String()), te.Value)
		}
		return nil, errors.New("arguments must be a JSON object")
	}
	if a.Handle == "" {
		return nil, errors.New(`argument "handle" is required: the h_… handle of a loaded skill`)
	}
	for _, req := range r.required {
		if _, ok := fields[req]; !ok {
			return nil, fmt.Errorf("argument %q is required", req)
		}
	}
	return a, nil
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
