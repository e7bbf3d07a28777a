package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/spec"
)

// The wrapping rule (see exitError): each layer of an error adds its
// context once. These tests walk the error paths a user meets — the
// bad-input corpus through every command that reads it, and the examples
// with their scripts broken step by step — and fail on a message that says
// the same thing twice (`tool greet: tool greet: …`, `task note (agent
// w): … agent w (task note) …`, `model: scripted model`) or gets a plural
// wrong (`1 more problems`, `2 error`).

// subject is a thing a message may name: a kind and a name.
var subject = regexp.MustCompile(`\b(tool|task|agent|skill|script|workflow|run|handle|server) ("[^"]+"|[A-Za-z0-9_][\w./@-]*)`)

// countable nouns whose plural a message must get right.
const nouns = `problem|error|warning|file|run|task|skill|step|call|message|token|byte|attempt|time|workflow|line|result|tool|agent|resource|match|change`

var (
	pluralAfterOne    = regexp.MustCompile(`(?:^|[^\d.,-])1 (?:more |other |older )?(` + nouns + `)s\b`)
	singularAfterMany = regexp.MustCompile(`(?:^|[^\d.,-])(?:0|1\d+|[2-9]\d*) (?:more |other |older )?(` + nouns + `)\b[^s]?`)
)

// repetition says what msg repeats, or "" if it says each thing once.
// Items of a list ("task a failed: x; task b failed: x") are checked one
// by one: saying the same of two things is not repetition.
func repetition(msg string) string {
	for _, item := range strings.Split(msg, "; ") {
		if r := layerRepetition(item); r != "" {
			return r
		}
	}
	if m := pluralAfterOne.FindString(msg); m != "" {
		return fmt.Sprintf("plural after one: %q", strings.TrimSpace(m))
	}
	if m := singularAfterMany.FindStringSubmatch(msg); m != nil && !strings.HasSuffix(m[0], "s") {
		return fmt.Sprintf("singular after a number other than one: %q", strings.TrimSpace(m[0]))
	}
	return ""
}

// layerRepetition checks one chain of "layer: layer: …".
func layerRepetition(msg string) string {
	layers := strings.Split(msg, ": ")
	seenLayer := map[string]bool{}
	seenSubject := map[string]int{}
	for i, l := range layers {
		l = strings.TrimSpace(l)
		if l != "" && seenLayer[l] {
			return fmt.Sprintf("%q twice", l)
		}
		seenLayer[l] = true
		for _, m := range subject.FindAllStringSubmatch(l, -1) {
			key := m[1] + " " + strings.Trim(m[2], `"`)
			if j, ok := seenSubject[key]; ok && j != i {
				return fmt.Sprintf("%q in two layers", key)
			}
			seenSubject[key] = i
		}
		// A one-word layer that a later layer says again: "model:
		// scripted model: …", "host: … host …".
		if l != "" && !strings.ContainsAny(l, " /.\"'") {
			// As a word of the text, not inside a path or a name.
			word := regexp.MustCompile(`(?:^|[\s(])` + regexp.QuoteMeta(l) + `(?:[\s),]|$)`)
			for _, later := range layers[i+1:] {
				if word.MatchString(later) {
					return fmt.Sprintf("%q, then again in %q", l, later)
				}
			}
		}
	}
	return ""
}

func TestRepetition(t *testing.T) {
	bad := []string{
		"tool greet: tool greet: reply: template: x",
		"task note (agent greeter/writer): model: scripted model: agent greeter/writer (task note) has no steps in x.yaml",
		"task note (greeter/writer) failed: task note (agent greeter/writer): boom",
		"model: scripted model: host has no steps",
		"x.yaml:1:1: bad (and 1 more problems; run fsd validate x.yaml)",
		"3 file, 2 errors",
		"skipped 2 run",
		"host: scripted model: step 3 of host in x.yaml: boom",
		"validate: give at least one file or folder (see fsd validate --help)",
	}
	good := []string{
		"tool greet: reply: template: x",
		"scripted model: hello.script.yaml has no steps for agent greeter/writer (task note)",
		"x.yaml:1:1: bad (and 1 more problem; run fsd validate x.yaml)",
		"1 file, 0 errors, 2 warnings",
		"file is 4386073 bytes, over the 4194304-byte (4 MiB) limit",
		"removed 3 runs, kept 1",
		`dependency cycle: "a" -> "b" -> "a"`,
		"skills/greeter/greeter.skill.yaml:3:1: skill greeter: unknown key",
		"arguments are 2000000 bytes; the limit is 1 MiB (1048576 bytes)",
		"board blocked: task a failed: scripted model: boom; task b failed: scripted model: boom",
		"pipeline: task polish failed: scripted model: agents.editor in examples/pipeline.script.yaml has 0 steps",
	}
	for _, m := range bad {
		if repetition(m) == "" {
			t.Errorf("not caught: %q", m)
		}
	}
	for _, m := range good {
		if r := repetition(m); r != "" {
			t.Errorf("false alarm on %q: %s", m, r)
		}
	}
}

// messages collects what a user reads when something goes wrong, from
// walks that run at once.
type messages struct {
	mu   sync.Mutex
	seen map[string]string // message -> how it was produced
}

func (ms *messages) add(how, text string) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "fsd: "))
		if line == "" || strings.HasPrefix(line, "    ") {
			continue
		}
		if _, ok := ms.seen[line]; !ok {
			ms.seen[line] = how
		}
	}
}

// fsd runs a command and keeps its stderr, and with --events json the
// error texts of its events.
func (ms *messages) fsd(t *testing.T, args ...string) {
	t.Helper()
	how := "fsd " + strings.Join(args, " ")
	code, out, errs := fsd(t, args...)
	if code == exitInternal {
		t.Errorf("%s: internal error: %s", how, errs)
	}
	ms.add(how, errs)
	if args[0] == "validate" {
		ms.add(how, out)
	}
	if len(args) > 2 && contains(args, "--events") {
		for _, e := range events(t, out) {
			ms.add(how, e.Err)
			if e.Error {
				ms.add(how+" (tool result)", e.Result)
			}
		}
	}
}

func (ms *messages) check(t *testing.T) {
	keys := make([]string, 0, len(ms.seen))
	for k := range ms.seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, m := range keys {
		if r := repetition(m); r != "" {
			t.Errorf("%s\n    %s\n    (%s)", r, m, ms.seen[m])
		}
	}
}

func TestErrorPathsSayEachThingOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("walks every error path")
	}
	t.Parallel()
	ms := &messages{seen: map[string]string{}}
	runs := t.TempDir()
	probe := t.TempDir()
	// The examples, copied: their scripts are broken in the copy.
	examples := filepath.Join(t.TempDir(), "examples")
	copyDir(t, "../../examples", examples)
	var workflows []string
	_ = filepath.Walk(examples, func(p string, info os.FileInfo, err error) error {
		if err == nil && spec.IsWorkflowFile(p) {
			workflows = append(workflows, p)
		}
		return nil
	})
	if len(workflows) < 5 {
		t.Fatalf("%d example workflows", len(workflows))
	}
	// The walks run at once: their runs mostly wait on the record's syncs
	// and their tools, and each example's script is a file of its own.
	t.Run("walk", func(t *testing.T) {
		// The bad-input corpus, through every command that reads it.
		t.Run("corpus", func(t *testing.T) {
			t.Parallel()
			corpus := "../../spec/testdata/bad"
			entries, err := os.ReadDir(corpus)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				p := filepath.Join(corpus, e.Name())
				if strings.HasSuffix(p, ".golden") {
					continue
				}
				ms.fsd(t, "validate", p)
				if spec.IsWorkflowFile(p) {
					ms.fsd(t, "run", p, "--runs-dir", runs, "--events", "json")
					ms.fsd(t, "context", p)
					ms.fsd(t, "graph", p)
					continue
				}
				// A skill: a workflow that finds it, run as a conversation.
				abs, _ := filepath.Abs(p)
				wf := filepath.Join(probe, e.Name()+".workflow.yaml")
				write(t, wf, fmt.Sprintf("name: probe\nmodel: scripted\nscript: probe.script.yaml\nskills: [%q]\nhost: {prompt: p}\ninput: hi\n", abs))
				write(t, filepath.Join(probe, "probe.script.yaml"), "host:\n  - say: done\n")
				ms.fsd(t, "run", wf, "--runs-dir", runs, "--events", "json")
				ms.fsd(t, "context", wf)
			}
		})
		// The examples, with their scripts broken one generator at a time.
		for _, wf := range workflows {
			name, _ := filepath.Rel(examples, wf)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				script := strings.TrimSuffix(wf, ".workflow.yaml") + ".script.yaml"
				orig, err := os.ReadFile(script)
				if err != nil {
					t.Fatal(err)
				}
				for _, variant := range brokenScripts(t, orig) {
					write(t, script, variant)
					// --approve auto: nobody is there to answer a call that asks.
					ms.fsd(t, "run", wf, "--runs-dir", runs, "--events", "json", "--approve", "auto")
					ms.fsd(t, "run", wf, "--runs-dir", runs, "--approve", "auto") // progress lines
				}
				write(t, script, string(orig))
				ms.fsd(t, "run", wf, "--runs-dir", runs, "--model", "openai/none", "--events", "json", "--approve", "auto")
				ms.fsd(t, "run", wf, "--runs-dir", runs, "--replay", filepath.Join(probe, "no-such.jsonl"), "--approve", "auto")
			})
		}
	})
	// Usage errors of every command, once the runs above are in the record.
	for _, args := range [][]string{
		{"run"}, {"run", "a", "b"}, {"run", "x.yaml", "--events", "xml"}, {"run", "x.yaml", "--timeout", "-1s"},
		{"context"}, {"graph", "x", "--format", "png"}, {"validate"}, {"validate", "--format", "xml", "."},
		{"schema", "nope"}, {"resume"}, {"resume", "nope", "--runs-dir", runs}, {"runs", "show", "nope", "--runs-dir", runs},
		{"runs", "prune"}, {"runs", "prune", "--older-than", "soon"}, {"init", "--template", "nope"}, {"frobnicate"}, {"run", "--bogus"},
	} {
		ms.fsd(t, args...)
	}
	if len(ms.seen) < 100 {
		t.Errorf("only %d distinct messages: the walk is not reaching the error paths", len(ms.seen))
	}
	ms.check(t)
}

// brokenScripts returns variants of a scripted-model script that fail
// along different paths: each generator's list cut short (empty, and
// missing its last step), every call given empty arguments, and every say
// turned into a fail.
func brokenScripts(t *testing.T, orig []byte) []string {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(orig, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	emit := func(d map[string]any) {
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	// Each generator's list, addressed as (section, name).
	type gen struct{ section, name string }
	var gens []gen
	if _, ok := doc["host"]; ok {
		gens = append(gens, gen{"host", ""})
	}
	for _, sec := range []string{"agents", "tasks"} {
		if m, ok := doc[sec].(map[string]any); ok {
			for name := range m {
				gens = append(gens, gen{sec, name})
			}
		}
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i].section+gens[i].name < gens[j].section+gens[j].name })
	list := func(d map[string]any, g gen) ([]any, func([]any)) {
		if g.section == "host" {
			l, _ := d["host"].([]any)
			return l, func(n []any) { d["host"] = n }
		}
		m := d[g.section].(map[string]any)
		l, _ := m[g.name].([]any)
		return l, func(n []any) { m[g.name] = n }
	}
	for _, g := range gens {
		for _, cut := range []int{0, -1} {
			d := clone(t, orig)
			l, set := list(d, g)
			n := len(l) + cut
			if cut == 0 {
				n = 0
			}
			if n < 0 || n == len(l) {
				continue
			}
			set(l[:n])
			emit(d)
		}
	}
	// Every call with empty arguments, every say a fail.
	for _, mutate := range []func(step map[string]any){
		func(s map[string]any) {
			if _, ok := s["call"]; ok {
				s["args"] = map[string]any{}
			}
		},
		func(s map[string]any) {
			if _, ok := s["say"]; ok {
				delete(s, "say")
				s["fail"] = "the provider is down"
			}
		},
	} {
		d := clone(t, orig)
		for _, g := range gens {
			l, _ := list(d, g)
			for _, st := range l {
				if m, ok := st.(map[string]any); ok {
					mutate(m)
				}
			}
		}
		emit(d)
	}
	return out
}

func clone(t *testing.T, orig []byte) map[string]any {
	var d map[string]any
	if err := yaml.Unmarshal(orig, &d); err != nil {
		t.Fatal(err)
	}
	return d
}
