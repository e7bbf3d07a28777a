package fanout

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// files are the workflow's skill and script, the same at every size.
var files = map[string]string{
	"skills/fan/fan.skill.yaml": `id: fan
name: Fan
description: Answers a fan-out task at once; the joiner reports the count.
version: 1.0.0
instructions: Answer the task.
agents:
  worker: {description: Answers one task., prompt: Answer., max-steps: 2}
  joiner: {description: Joins the results., prompt: Join., max-steps: 2}
`,
	"fan.script.yaml": `agents:
  worker: [{say: 'done {{.Task.ID}}'}]
  joiner: [{say: 'joined'}]
`,
}

// Workflow is the text of the fan-out workflow of n tasks (t0 … tn-1)
// and the join.
func Workflow(n int) string {
	var w strings.Builder
	fmt.Fprintf(&w, "name: fanout-%d\nmodel: scripted\nscript: fan.script.yaml\nskills: [./skills]\n", n)
	fmt.Fprintf(&w, "limits: {concurrency: 4, max-pending-tasks: %d, max-total-tasks: %d}\n", n+1, n+1)
	w.WriteString("input: fan out\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&w, "  - {id: t%d, assignee: fan/worker, goal: task %d}\n", i, i)
	}
	w.WriteString("  - id: join\n    assignee: fan/joiner\n    goal: join\n    deps: [")
	for i := range n {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString("t" + strconv.Itoa(i))
	}
	w.WriteString("]\n")
	return w.String()
}

// Write writes the fan-out of n tasks into dir, with its skill and
// script, and returns the workflow's path.
func Write(dir string, n int) (string, error) {
	all := map[string]string{"fan.workflow.yaml": Workflow(n)}
	for name, text := range files {
		all[name] = text
	}
	for name, text := range all {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "fan.workflow.yaml"), nil
}
