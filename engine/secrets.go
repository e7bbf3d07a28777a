package engine

import (
	"encoding/json"
	"os"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// runSecrets is what a run or a worker's attempt masks from the start:
// the secrets of fsd's own environment (its providers' API keys among
// them) and the ones its caller knows (a transport's credentials). The
// skills add theirs as they are compiled (toolbox.compile).
func runSecrets(extra []string) *redact.Set {
	return redact.NewSet(append(redact.FromEnv(os.Environ()), extra...)...)
}

// skillSecrets are the values a skill's programs take from fsd's
// environment, whatever their names: the variables its command tools and
// stdio MCP servers list, and those its HTTP MCP servers' headers send.
// PATH and HOME, which every program gets, are not secrets.
func skillSecrets(s *spec.Skill) []string {
	var names []string
	for _, t := range s.Tools {
		names = append(names, t.Run.Env...)
	}
	var values []string
	for _, m := range s.MCP {
		names = append(names, m.Env...)
		for _, v := range m.Headers {
			names = append(names, v)
		}
		names = append(names, m.Vars()...)
		values = append(values, m.Literals()...)
	}
	for _, n := range names {
		if n == "PATH" || n == "HOME" {
			continue
		}
		if v, ok := os.LookupEnv(n); ok {
			values = append(values, v)
		}
	}
	return values
}

// maskResult masks a tool's result as it comes back, before anything
// else sees it: the transcript and its journal, the events, the next
// requests, the approvals and spans all read it from here.
//
// S8: a tool's output is masked once, where it enters the run.
func (g *generator) maskResult(res model.ToolResult) model.ToolResult {
	res.Text = g.secrets.String(res.Text)
	return res
}

// maskResponse masks a model's answer and its calls' arguments: a model
// that learnt a secret elsewhere does not get it recorded, and the call
// runs with the masked arguments the record holds.
func (g *generator) maskResponse(resp *model.Response) {
	if g.secrets.Secrets().Len() == 0 {
		return
	}
	resp.Text = g.secrets.String(resp.Text)
	for i, c := range resp.Calls {
		masked := g.secrets.String(string(c.Args))
		if masked == string(c.Args) {
			continue
		}
		if !json.Valid([]byte(masked)) {
			// A secret that was a whole JSON value (a number): the
			// arguments become a string, as a model's non-JSON slip does.
			b, _ := json.Marshal(masked)
			masked = string(b)
		}
		resp.Calls[i].Args = json.RawMessage(masked)
	}
}
