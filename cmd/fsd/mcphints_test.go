package main

import (
	"testing"

	"github.com/fsdrun/fsd/spec"
)

// The served tool's hints follow what the workflow's tools may do and
// whether anybody is asked first.
//
// P7: readOnlyHint and destructiveHint from the tools and approve:.
func TestMCPServeToolHints(t *testing.T) {
	command := func(approve spec.Approve) spec.Tool {
		return spec.Tool{Name: "deploy", Run: spec.ToolRun{Kind: spec.RunCommand}, Approve: approve}
	}
	skill := func(s spec.Skill) []*spec.Skill { s.Dir = t.TempDir(); return []*spec.Skill{&s} }
	for _, tt := range []struct {
		name                  string
		wf                    spec.Workflow
		skills                []*spec.Skill
		readOnly, destructive bool
	}{
		{"nothing acts", spec.Workflow{Tools: []string{"Read", "Grep"}}, skill(spec.Skill{Tools: []spec.Tool{{Name: "note", Run: spec.ToolRun{Kind: spec.RunReply}}}}), true, false},
		{"a command nobody approves", spec.Workflow{}, skill(spec.Skill{Tools: []spec.Tool{command("")}}), false, true},
		{"a command that asks", spec.Workflow{}, skill(spec.Skill{Tools: []spec.Tool{command(spec.ApproveAlways)}}), false, false},
		{"an MCP server, the workflow asks", spec.Workflow{Approve: spec.ApproveFirst}, skill(spec.Skill{MCP: []spec.MCPServer{{Name: "s"}}}), false, false},
		{"Write, nobody asks", spec.Workflow{Tools: []string{"Write"}}, nil, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := toolHints(&spec.Project{Workflow: &tt.wf, Skills: tt.skills})
			if h.ReadOnlyHint != tt.readOnly || *h.DestructiveHint != tt.destructive {
				t.Errorf("readOnly %v, destructive %v; want %v, %v", h.ReadOnlyHint, *h.DestructiveHint, tt.readOnly, tt.destructive)
			}
		})
	}
}
