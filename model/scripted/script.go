package scripted

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"go.yaml.in/yaml/v4"
)

// Call is one scripted tool call.
type Call struct {
	Call string         `yaml:"call"`
	Args map[string]any `yaml:"args"`
}

// Step is one model response: text (`say`), one call, several calls, or
// text together with calls.
type Step struct {
	Say   string         `yaml:"say"`
	Call  string         `yaml:"call"`
	Args  map[string]any `yaml:"args"`
	Calls []Call         `yaml:"calls"`
	// Fail makes the model return an error at this step, to script faults.
	Fail string `yaml:"fail"`
	// Sleep delays the answer, as a real model's latency would (a Go
	// duration: 300ms, 2s). It makes live boards and interruptions
	// observable in demos and tests.
	Sleep string `yaml:"sleep"`
}

// Script is a parsed script file.
type Script struct {
	File string `yaml:"-"`
	Host []Step `yaml:"host"`
	// Turns are the host's steps in a session, one list per turn
	// (model.Caller.Turn); none: every turn plays Host.
	Turns  [][]Step          `yaml:"turns"`
	Agents map[string][]Step `yaml:"agents"`
	Tasks  map[string][]Step `yaml:"tasks"`
}

// maxScriptSize bounds a script file like any manifest.
const maxScriptSize = 4 << 20

// Load reads and checks a script file.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	return Parse(path, data)
}

// Parse checks a script given as bytes; file names it in errors.
func Parse(file string, data []byte) (*Script, error) {
	if len(data) > maxScriptSize {
		return nil, fmt.Errorf("%s: script is %d bytes, over the 4 MiB limit", file, len(data))
	}
	s := &Script{File: file}
	if len(bytes.TrimSpace(data)) == 0 {
		return s, nil
	}
	if err := yaml.Load(data, s, yaml.WithKnownFields()); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	check := func(where string, steps []Step) error {
		for i, st := range steps {
			if st.Sleep != "" {
				if d, err := time.ParseDuration(st.Sleep); err != nil || d < 0 {
					return fmt.Errorf("%s: %s step %d: sleep %q is not a duration such as 300ms", file, where, i+1, st.Sleep)
				}
			}
			n := 0
			if st.Call != "" {
				n++
			}
			if len(st.Calls) > 0 {
				n++
			}
			if st.Fail != "" && (n > 0 || st.Say != "") {
				return fmt.Errorf("%s: %s step %d: fail cannot be combined with say or calls", file, where, i+1)
			}
			if n > 1 {
				return fmt.Errorf("%s: %s step %d: use either call or calls, not both", file, where, i+1)
			}
			if n == 0 && st.Say == "" && st.Fail == "" {
				return fmt.Errorf("%s: %s step %d: a step needs say, call, calls or fail", file, where, i+1)
			}
			for j, c := range st.Calls {
				if c.Call == "" {
					return fmt.Errorf("%s: %s step %d: calls[%d] has no call", file, where, i+1, j)
				}
			}
		}
		return nil
	}
	if err := check("host", s.Host); err != nil {
		return nil, err
	}
	for i, steps := range s.Turns {
		if err := check(fmt.Sprintf("turns[%d]", i), steps); err != nil {
			return nil, err
		}
	}
	for name, steps := range s.Agents {
		if err := check("agent "+name, steps); err != nil {
			return nil, err
		}
	}
	for id, steps := range s.Tasks {
		if err := check("task "+id, steps); err != nil {
			return nil, err
		}
	}
	return s, nil
}
