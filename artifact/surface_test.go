package artifact

import (
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/tokens"
)

// The reader tools are in every request while a handle skill is loaded:
// all their definitions together cost at most 600 tokens (o200k, counted
// as request events count tools: name, description, parameter schema),
// against 2,202 for fifteen separate tools.
func TestReaderSurfaceTokens(t *testing.T) {
	total := 0
	for _, d := range Tools() {
		n := tokens.Count(d.Name) + tokens.Count(d.Description) + tokens.Count(string(d.Parameters))
		t.Logf("%s: %d tokens", d.Name, n)
		total += n
	}
	t.Logf("reader definitions: %d tokens (%d tools, %d operations)", total, len(Tools()), len(ops))
	if total > 600 {
		t.Errorf("reader definitions cost %d tokens, want at most 600", total)
	}
	named := 0
	for _, d := range NamedTools() {
		named += tokens.Count(d.Name) + tokens.Count(d.Description) + tokens.Count(string(d.Parameters))
	}
	t.Logf("named reader definitions: %d tokens (%d tools)", named, len(NamedTools()))
}

// Each tool's schema lists exactly its operations in get's enum and every
// argument one of them takes, so the model is offered nothing the reader
// would refuse and refused nothing it was offered.
func TestReaderSchemasMatchOperations(t *testing.T) {
	keys := 0
	for _, o := range ops {
		if o.tool != "" {
			keys++ // "tool get"
		}
		if o.named != "" {
			keys++ // its named tool
		}
	}
	if len(Describe()) != keys {
		t.Error("an operation without a description, or two with one key")
	}
	for _, d := range Tools() {
		var schema struct {
			Properties map[string]struct {
				Type string   `json:"type"`
				Enum []string `json:"enum"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		want := map[string]string{"handle": "string", "path": "string", "get": ""}
		var wantGets []string
		for _, o := range ops {
			if o.tool != d.Name {
				continue
			}
			wantGets = append(wantGets, o.get)
			for _, p := range o.params {
				want[p.name] = p.typ
			}
		}
		if len(schema.Properties) != len(want) {
			t.Errorf("%s: %d properties, want %d", d.Name, len(schema.Properties), len(want))
		}
		for name, typ := range want {
			if p, ok := schema.Properties[name]; !ok || p.Type != typ {
				t.Errorf("%s: property %s is %+v, want type %q", d.Name, name, p, typ)
			}
		}
		if got := schema.Properties["get"].Enum; len(got) != len(wantGets) {
			t.Errorf("%s: get enum %v, want %v", d.Name, got, wantGets)
		}
		if len(schema.Required) != 2 || schema.Required[0] != "handle" || schema.Required[1] != "get" {
			t.Errorf("%s: required %v, want [handle get]", d.Name, schema.Required)
		}
	}
}
