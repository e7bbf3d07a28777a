package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/mcptest"
)

// aguiClient is the official AG-UI client, pinned.
const aguiClient = "@ag-ui/client@1.0.0"

// @ag-ui/client's HttpAgent runs a turn against fsd serve's /agui: it
// receives the text, the tool call and its result, the run's end; the
// call that needs approval ends the first run with an interrupt, and the
// second run's resume approves it.
//
// Y23: the official client reads fsd serve's AG-UI stream.
func TestAGUIHttpAgent(t *testing.T) {
	t.Parallel()
	_, u := serveProc(t, markWorkflow(t))
	out, stderr := runJSClient(t, "testdata/agui/client.mjs", aguiClient, "FSD_AGUI_URL="+u.JoinPath("agui").String())
	var got struct {
		First, Second []string
		Interrupts    []struct {
			ID, Reason, ToolCallID string
		}
		Outcome  struct{ Type string }
		Result   string
		Messages []struct {
			Role      string
			Content   any
			ToolCalls []string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v\nstderr:\n%s", out, err, stderr.String())
	}
	if len(got.First) == 0 || got.First[0] != "RUN_STARTED" || got.First[len(got.First)-1] != "RUN_FINISHED" || !slices.Contains(got.First, "TOOL_CALL_START") {
		t.Errorf("first run's events = %v", got.First)
	}
	if len(got.Interrupts) != 1 || got.Interrupts[0].Reason != "tool_approval" || got.Interrupts[0].ToolCallID == "" {
		t.Fatalf("interrupts = %+v, want the mark call's approval", got.Interrupts)
	}
	if !slices.Contains(got.Second, "TOOL_CALL_RESULT") || !slices.Contains(got.Second, "TEXT_MESSAGE_CONTENT") || got.Second[len(got.Second)-1] != "RUN_FINISHED" {
		t.Errorf("second run's events = %v", got.Second)
	}
	if got.Outcome.Type != "success" || got.Result != "all marked" {
		t.Errorf("outcome %+v, result %q", got.Outcome, got.Result)
	}
	var tools []string
	var texts []string
	for _, m := range got.Messages {
		tools = append(tools, m.ToolCalls...)
		if s, ok := m.Content.(string); ok && m.Role != "user" {
			texts = append(texts, strings.TrimSpace(s))
		}
	}
	if !slices.Contains(tools, "mark") || !slices.Contains(texts, "marked one") || !slices.Contains(texts, "all marked") {
		t.Errorf("the client's messages = %+v, want the mark call, its result and the answer", got.Messages)
	}
}

// markWorkflow writes a workflow whose scripted host reads skill aa, calls
// its mark tool (which needs approval) and answers "all marked".
func markWorkflow(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	aa := filepath.Join(dir, "skills", "aa")
	write(t, filepath.Join(aa, "tool.sh"), "#!/bin/sh\necho \"marked $1\"\n")
	if err := os.Chmod(filepath.Join(aa, "tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(aa, "aa.skill.yaml"), `id: aa
name: Skill aa
description: Marks.
version: 1.0.0
instructions: Mark things.
tools:
  - name: mark
    description: Marks the call.
    approve: always
    input: {type: object, properties: {id: {type: string}}, required: [id]}
    run: {command: [./tool.sh, "{{.id}}"]}
`)
	write(t, filepath.Join(dir, "chat.script.yaml"), `host:
  - call: read_skill
    args: {id: aa}
  - call: mark
    args: {id: one}
  - say: all marked
`)
	wf := filepath.Join(dir, "chat.workflow.yaml")
	write(t, wf, "name: chat\nmodel: scripted\nscript: chat.script.yaml\nskills: [./skills]\nhost: {prompt: You chat.}\n")
	return wf
}

// runJSClient runs the node script with the npm package pkg installed,
// env added to its environment, and returns its stdout and stderr; a
// client that fails fails the test.
func runJSClient(t *testing.T, script, pkg, env string) ([]byte, *strings.Builder) {
	t.Helper()
	node := mcptest.Node(t)
	path := mcptest.Script(t, script, pkg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, path)
	cmd.Env = append(os.Environ(), env)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\nstderr:\n%s", err, stderr.String())
	}
	return out, stderr
}
