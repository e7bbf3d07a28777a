package tool

import (
	"bytes"
	"encoding/json"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Input checks a tool's arguments against its JSON Schema. Every kind of
// tool uses it, so a model meets the same messages whatever runs the call:
// command and reply tools, and the tools of MCP servers (whose schema
// comes from the server).
type Input struct {
	schema *jsonschema.Schema
	params json.RawMessage
}

// CompileInput compiles the JSON Schema doc (nil means any object) of the
// tool name.
func CompileInput(name string, doc any) (*Input, error) {
	if doc == nil {
		doc = map[string]any{"type": "object"}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	// Re-read the schema as JSON so numbers are json.Number, whatever the
	// YAML decoder produced.
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	url := "mem:///tools/" + name + ".json"
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource(url, v); err != nil {
		return nil, err
	}
	s, err := comp.Compile(url)
	if err != nil {
		return nil, err
	}
	return &Input{schema: s, params: raw}, nil
}

// Params is the schema as JSON, as offered to the model.
func (in *Input) Params() json.RawMessage { return in.params }

// Decode checks args against the size limit, JSON, objectness and the
// schema, in that order. When ok is false, res is the error result the
// model reads.
func (in *Input) Decode(args json.RawMessage) (v map[string]any, res Result, ok bool) {
	if len(args) > MaxArgsBytes {
		return nil, errorf("arguments are %d bytes; the limit is 1 MiB (%d bytes)", len(args), MaxArgsBytes), false
	}
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = json.RawMessage("{}") // no arguments at all (some models send null): an empty object
	}
	x, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return nil, errorf("arguments are not valid JSON: %v", err), false
	}
	m, isObj := x.(map[string]any)
	if !isObj {
		return nil, errorf("arguments must be a JSON object, got %s", jsonKind(x)), false
	}
	if err := in.schema.Validate(x); err != nil {
		return nil, Result{Text: violations(err), IsError: true}, false
	}
	return m, Result{}, true
}
