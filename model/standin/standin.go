package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/fsdrun/fsd/internal/lazyre"
	"github.com/fsdrun/fsd/model"
)

// Name is the model string that names the stand-in.
const Name = "standin"

// DefaultCutoff is how many words a query must share with a description
// for the stand-in to read that skill.
const DefaultCutoff = 2

// Model is the stand-in. The zero value uses DefaultCutoff and seed 0.
type Model struct {
	// Cutoff is the shared-word count that reads a skill; 0 is
	// DefaultCutoff.
	Cutoff int
	// Seed picks the near misses that are read: even seeds read them.
	// An eval passes the repeat's index.
	Seed int
}

// New returns a stand-in with the default cut-off and the given seed.
func New(seed int) *Model { return &Model{Seed: seed} }

// Capabilities: the stand-in takes tools and typed output, nothing else.
func (m *Model) Capabilities() model.Capabilities {
	return model.Capabilities{Tools: true, TypedOutput: true}
}

// Generate answers one request; it is a pure function of the request and
// the model's settings, so it is safe for concurrent use.
func (m *Model) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	var resp *model.Response
	switch {
	case req.Output != nil:
		resp = m.typed(req)
	case req.Caller.Agent != "" || req.Caller.TaskID != "":
		resp = &model.Response{Text: "Done: " + req.Caller.TaskGoal}
	default:
		resp = m.host(req)
	}
	resp.Usage = usage(req, resp)
	return resp, nil
}

// host plays the host: read, call the query's tools, answer.
func (m *Model) host(req *model.Request) *model.Response {
	query := firstUser(req.Messages)
	var read string
	called := map[string]bool{}
	for _, msg := range req.Messages {
		for _, c := range msg.Calls {
			if c.Name == "read_skill" {
				var a struct{ ID string }
				_ = json.Unmarshal(c.Args, &a)
				read = a.ID
			} else {
				called[c.Name] = true
			}
		}
	}
	last := req.Messages[len(req.Messages)-1]
	switch {
	case read == "":
		if id := m.Choose(query, Catalog(req.Context)); id != "" {
			return call("c0", "read_skill", map[string]string{"id": id})
		}
		return &model.Response{Text: "No skill in the catalog fits this request."}
	case len(called) == 0:
		var calls []model.ToolCall
		words := wordSet(query, false)
		for _, t := range req.Tools {
			if words[strings.ToLower(t.Name)] && t.Name != "read_skill" {
				calls = append(calls, model.ToolCall{ID: fmt.Sprintf("c%d", len(calls)+1), Name: t.Name, Args: args(t, query)})
			}
		}
		if len(calls) > 0 {
			return &model.Response{Calls: calls}
		}
		return &model.Response{Text: "I read the skill " + read + "."}
	case last.Role == model.Tool:
		return &model.Response{Text: last.Text}
	}
	return &model.Response{Text: "Done."}
}

// Choose is the skill the stand-in reads for query, "" for none: the entry
// sharing the most words with the query (the first in catalog order on a
// tie), at least Cutoff of them, or Cutoff-1 on an even seed (V3).
func (m *Model) Choose(query string, entries []Entry) string {
	cut := m.Cutoff
	if cut <= 0 {
		cut = DefaultCutoff
	}
	q := wordSet(query, true)
	best, score := "", 0
	for _, e := range entries {
		n := 0
		for w := range wordSet(e.Description, true) {
			if q[w] {
				n++
			}
		}
		if n > score {
			best, score = e.ID, n
		}
	}
	switch {
	case score >= cut:
		return best
	case score > 0 && score == cut-1 && m.Seed%2 == 0:
		return best
	}
	return ""
}

// Shared is how many words query and description share, as Choose counts.
func Shared(query, description string) int {
	q, n := wordSet(query, true), 0
	for w := range wordSet(description, true) {
		if q[w] {
			n++
		}
	}
	return n
}

// Entry is one skill of a request's catalog.
type Entry struct{ ID, Description string }

var entryRE = lazyre.New(`(?m)^- id: (\S+)$(?:\n  [a-z]+: .*$)*`)

// Catalog reads the skills' ids and descriptions from a request's
// context block, as the engine renders its catalog.
func Catalog(context string) []Entry {
	start := strings.Index(context, "<catalog>")
	end := strings.Index(context, "</catalog>")
	if start < 0 || end < start {
		return nil
	}
	var out []Entry
	for _, m := range entryRE().FindAllStringSubmatch(context[start:end], -1) {
		e := Entry{ID: m[1]}
		for _, line := range strings.Split(m[0], "\n") {
			if d, ok := strings.CutPrefix(line, "  description: "); ok {
				e.Description = d
			}
		}
		out = append(out, e)
	}
	return out
}

// verdict is what the stand-in judges with.
type verdict struct {
	Passed   bool   `json:"passed"`
	Evidence string `json:"evidence"`
}

var quotedRE = lazyre.New("\"([^\"]+)\"|`([^`]+)`")

// typed answers a typed request: a verdict when the schema asks for one
// (the rubric and the text under judgement are in the user message), else
// an empty object.
func (m *Model) typed(req *model.Request) *model.Response {
	if !strings.Contains(string(req.Output.Schema), `"passed"`) {
		return &model.Response{Text: "{}"}
	}
	text := firstUser(req.Messages)
	rubric, answer, _ := strings.Cut(text, "\n</rubric>")
	rubric = strings.TrimPrefix(rubric, "<rubric>\n")
	v := verdict{Passed: true, Evidence: "every quoted term of the rubric is in the answer"}
	for _, q := range quotedRE().FindAllStringSubmatch(rubric, -1) {
		term := q[1] + q[2]
		if !strings.Contains(answer, term) {
			v = verdict{Passed: false, Evidence: fmt.Sprintf("the answer does not contain %q", term)}
			break
		}
	}
	b, _ := json.Marshal(v)
	return &model.Response{Text: string(b)}
}

// args fills a tool's required string arguments with the query's last
// capitalised word (a name, usually), else the argument's own name.
func args(t model.ToolDef, query string) json.RawMessage {
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(t.Parameters, &schema)
	value := ""
	for _, w := range strings.FieldsFunc(query, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if r := []rune(w); unicode.IsUpper(r[0]) {
			value = w
		}
	}
	out := map[string]any{}
	req := append([]string(nil), schema.Required...)
	sort.Strings(req)
	for _, name := range req {
		if p, ok := schema.Properties[name]; ok && p.Type == "string" {
			out[name] = value
			if value == "" {
				out[name] = name
			}
		}
	}
	b, _ := json.Marshal(out)
	return b
}

func call(id, name string, a any) *model.Response {
	b, _ := json.Marshal(a)
	return &model.Response{Calls: []model.ToolCall{{ID: id, Name: name, Args: b}}}
}

func firstUser(msgs []model.Message) string {
	for _, m := range msgs {
		if m.Role == model.User {
			return m.Text
		}
	}
	return ""
}

// stop are words too common to say anything about a skill.
var stop = map[string]bool{
	"the": true, "and": true, "for": true, "with": true, "use": true, "when": true, "this": true,
	"that": true, "you": true, "are": true, "from": true, "into": true, "your": true, "can": true,
	"asked": true, "any": true, "all": true, "not": true, "but": true, "our": true, "has": true,
	"have": true, "was": true, "will": true, "what": true, "how": true, "please": true, "about": true,
}

// wordSet is a text's lower-case words; content keeps only those of three
// letters or more that are not stop words.
func wordSet(s string, content bool) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-'
	}) {
		w = strings.Trim(w, "-")
		if content && (len(w) < 3 || stop[w]) {
			continue
		}
		set[w] = true
	}
	return set
}

// usage is a fixed estimate: a token every four bytes, so costs and token
// bounds are known in advance too.
func usage(req *model.Request, resp *model.Response) model.Usage {
	in := len(req.Context)
	for _, m := range req.Messages {
		in += len(m.Text)
		for _, c := range m.Calls {
			in += len(c.Name) + len(c.Args)
		}
	}
	out := len(resp.Text)
	for _, c := range resp.Calls {
		out += len(c.Name) + len(c.Args)
	}
	return model.Usage{InputTokens: in/4 + 1, OutputTokens: out/4 + 1}
}
