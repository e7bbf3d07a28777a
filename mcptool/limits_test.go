package mcptool

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// A tool a server lists with a description or input schema over a
// manifest tool's limits is not offered, with a warning and a note naming
// the server, the tool and the size; the server's other tools, one at the
// limit included, are offered and callable.
func TestOversizedToolsDropped(t *testing.T) {
	testpar.UnlessRace(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "sizes", Version: "1.0.0"}, nil)
	echo := func(name string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil
		}
	}
	object := map[string]any{"type": "object"}
	props := map[string]any{}
	for i := range 100 {
		props[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string", "description": strings.Repeat("s", 1<<10)}
	}
	hugeSchema := map[string]any{"type": "object", "properties": props}
	srv.AddTool(&mcp.Tool{Name: "small", Description: "Small.", InputSchema: object}, echo("small"))
	srv.AddTool(&mcp.Tool{Name: "at_limit", Description: strings.Repeat("d", spec.MaxToolDescription), InputSchema: object}, echo("at_limit"))
	srv.AddTool(&mcp.Tool{Name: "long_description", Description: strings.Repeat("d", spec.MaxToolDescription+1), InputSchema: object}, echo("long_description"))
	srv.AddTool(&mcp.Tool{Name: "huge_schema", Description: "Huge.", InputSchema: hugeSchema}, echo("huge_schema"))
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()

	var log bytes.Buffer
	p := newPool(t, newEnv(t), Options{Logger: zerolog.New(&log)})
	tools, notes := p.Acquire(context.Background(), httpSkill(ts.URL, nil))
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Remote())
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"at_limit", "small"}) {
		t.Errorf("tools = %v, want [at_limit small]", names)
	}
	if res := call(byName(tools)["small"], `{}`); res.IsError || res.Text != "small ran" {
		t.Errorf("small = %+v", res)
	}
	wantNotes := []string{
		fmt.Sprintf("MCP server t: tool huge_schema is not offered: its input schema is %d bytes, over the 64 KiB limit", spec.JSONSize(hugeSchema, 1<<30)),
		fmt.Sprintf("MCP server t: tool long_description is not offered: its description is %d bytes, over the 16 KiB limit", spec.MaxToolDescription+1),
	}
	slices.Sort(notes)
	if !slices.Equal(notes, wantNotes) {
		t.Errorf("notes = %q\nwant %q", notes, wantNotes)
	}
	for _, want := range []string{
		`"server":"t","tool":"long_description","part":"description","bytes":16385`,
		`"server":"t","tool":"huge_schema","part":"input schema","bytes":`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, log.String())
		}
	}
}
