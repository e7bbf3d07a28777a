package specs

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed schemas/*.json
var files embed.FS

// Names lists the schemas by name (the file name without .json).
func Names() []string {
	entries, err := files.ReadDir("schemas")
	if err != nil {
		panic(err) // the embedded folder is there by construction
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(names)
	return names
}

var (
	mu       sync.Mutex
	compiled = map[string]*jsonschema.Schema{}
)

// Compile returns the named schema, compiled once.
func Compile(name string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[name]; ok {
		return s, nil
	}
	raw, err := files.ReadFile(path.Join("schemas", name+".json"))
	if err != nil {
		return nil, fmt.Errorf("no schema %q (have %s)", name, strings.Join(Names(), ", "))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem://specs/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	compiled[name] = s
	return s, nil
}

// Check validates body, a JSON request body, against the named schema.
func Check(name string, body []byte) error {
	s, err := Compile(name)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	return s.Validate(v)
}

// Validate fails t unless body validates against the named schema, and
// shows the body with the validator's explanation: how each client's tests
// hold its requests to the published reference (M20).
func Validate(t testing.TB, name string, body []byte) {
	t.Helper()
	if err := Check(name, body); err != nil {
		var pretty bytes.Buffer
		if json.Indent(&pretty, body, "", "  ") != nil {
			pretty.Reset()
			pretty.Write(body)
		}
		t.Errorf("the request does not validate against %s:\n%v\nbody:\n%s", name, err, pretty.String())
	}
}
