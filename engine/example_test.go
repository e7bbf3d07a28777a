package engine_test

import (
	"context"
	"fmt"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/spec"
)

// A workflow built in code, without YAML: one skill with a reply tool, a
// host, and the scripted model standing in for an LLM. Swap the model for
// a provider's to run it for real.
func Example() {
	greeter := &spec.Skill{
		ID: "greeter", Name: "Greeter", Version: "1.0.0",
		Description:  "Greets people by name. Use when asked to say hello.",
		Instructions: "# Greeter\n\nCall `greet` with the person's name.",
		Channel:      spec.ChannelInline,
		Tools: []spec.Tool{{
			Name:  "greet",
			Input: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}},
			Run:   spec.ToolRun{Kind: spec.RunReply, Reply: "Hello, {{.name}}!"},
		}},
	}
	project := &spec.Project{
		Workflow: &spec.Workflow{Name: "hello", Host: &spec.Host{Prompt: "You greet people."}},
		Skills:   []*spec.Skill{greeter},
	}
	script, err := scripted.Parse("hello.script.yaml", []byte(`
host:
  - call: read_skill
    args: {id: greeter}
  - call: greet
    args: {name: Ada}
  - say: 'The greeter said: {{.Last}}'
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	run, err := engine.New(project, engine.Options{Model: scripted.New(script, nil)})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := run.Execute(context.Background(), "Say hello to Ada.")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Answer)
	// Output: The greeter said: Hello, Ada!
}
