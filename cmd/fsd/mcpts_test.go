package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/mcptest"
)

// The official TypeScript SDK's client (@modelcontextprotocol/sdk, from
// npm) drives fsd mcp serve over stdio: the tool's annotations say what
// the workflow may do, its outputSchema describes the typed results and
// the SDK accepts the structuredContent against it, and the call waiting
// for approval is put to the client as an elicitation, whose approve lets
// the run finish.
//
// P6, P7, P8: the served tool as a rich client sees it.
func TestMCPServeTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := mcptest.Node(t)
	script := mcptest.Script(t, "testdata/mcpts/client.mjs", mcptest.TypeScriptSDK)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv, _ := json.Marshal([]string{exe, "mcp", "serve", "--runs-dir", t.TempDir(), "../../examples/release/release.workflow.yaml"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1", "FSD_SERVE_ARGV="+string(argv))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\nstderr:\n%s", err, stderr.String())
	}
	var got struct {
		Tool struct {
			Name         string `json:"name"`
			OutputSchema struct {
				Properties struct {
					Tasks struct {
						Properties map[string]any `json:"properties"`
					} `json:"tasks"`
				} `json:"properties"`
			} `json:"outputSchema"`
			Annotations map[string]any `json:"annotations"`
		} `json:"tool"`
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Answer string                     `json:"answer"`
				Run    string                     `json:"run"`
				Tasks  map[string]json.RawMessage `json:"tasks"`
			} `json:"structuredContent"`
		} `json:"result"`
		Asked []struct {
			Message string `json:"message"`
		} `json:"asked"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v\nstderr:\n%s", out, err, stderr.String())
	}
	if got.Tool.Name != "release" || got.Tool.Annotations["readOnlyHint"] != false || got.Tool.Annotations["destructiveHint"] != false {
		t.Errorf("tool = %+v, want release, not read-only (it publishes), not destructive (publishing asks)", got.Tool)
	}
	if _, ok := got.Tool.OutputSchema.Properties.Tasks.Properties["notes"]; !ok {
		t.Errorf("outputSchema's tasks = %+v, want the notes task's schema", got.Tool.OutputSchema.Properties.Tasks)
	}
	sc := got.Result.StructuredContent
	if got.Result.IsError || sc.Answer == "" || sc.Run == "" || !strings.Contains(string(sc.Tasks["notes"]), `"version":"1.4.0"`) {
		t.Errorf("result = %+v", got.Result)
	}
	if len(got.Asked) != 1 || !strings.Contains(got.Asked[0].Message, "wants to call publish") {
		t.Errorf("elicitations = %+v, want the publish call's approval", got.Asked)
	}
}
