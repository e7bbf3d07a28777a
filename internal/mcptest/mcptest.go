// Package mcptest is an MCP server for fsd's tests, built on the same SDK
// as fsd's client: tools that echo, fail, crash, hang, count and return
// images, resources and floods. Tests serve it over Streamable HTTP on
// loopback (HTTP), or run it as a stdio server by re-executing the test
// binary: a TestMain calls ServeIfAsked, and a manifest's command is the
// test binary with EnvServe=stdio in its env.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables the stdio server reads.
const (
	// EnvServe=stdio makes ServeIfAsked serve on stdin/stdout and exit.
	EnvServe = "FSD_MCPTEST_SERVE"
	// EnvLog names a file every call appends a line to ("TOOL ARGS"), so a
	// test can count calls across server processes.
	EnvLog = "FSD_MCPTEST_LOG"
	// EnvHang=1 makes the stdio server ignore the end of its input and
	// live on, like a server stuck in a loop: only a signal ends it.
	EnvHang = "FSD_MCPTEST_HANG"
	// EnvSecret is the variable the secrets tool prints, as a server
	// careless with what it was given would.
	EnvSecret = "FSD_MCPTEST_SECRET"
)

// Tools is every tool the server offers, sorted.
var Tools = []string{"add", "ask", "big", "crash", "echo", "fail", "image", "meta", "pid", "progress", "resource", "sample", "secrets", "sleep"}

// PNG is the image the image tool returns: a 1x1 PNG.
var PNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// Server returns a new test server. calls counts the calls it answers.
func Server(calls *atomic.Int64) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fsd-mcptest", Version: "1.0.0"}, nil)
	logCall := func(name string, args any) {
		if calls != nil {
			calls.Add(1)
		}
		if path := os.Getenv(EnvLog); path != "" {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				fmt.Fprintf(f, "%s %v\n", name, args)
				f.Close()
			}
		}
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		logCall("echo", in.Text)
		return text("echo: " + in.Text), nil, nil
	})
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two integers."}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
		logCall("add", fmt.Sprint(in.A, "+", in.B))
		return text(fmt.Sprint(in.A + in.B)), nil, nil
	})
	type none struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Answers a tool error."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		logCall("fail", "")
		r := text("the record is locked")
		r.IsError = true
		return r, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits the server process."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		logCall("crash", "")
		fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Answers only when cancelled."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		logCall("sleep", "")
		<-ctx.Done()
		logCall("sleep-cancelled", "")
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(s, &mcp.Tool{Name: "meta", Description: "The call's _meta, as JSON."}, func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		logCall("meta", "")
		b, _ := json.Marshal(req.Params.Meta)
		return text(string(b)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "secrets", Description: "What the server was given: EnvSecret and the Authorization header."}, func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		logCall("secrets", "")
		auth := ""
		if req.Extra != nil {
			auth = req.Extra.Header.Get("Authorization")
		}
		return text(fmt.Sprintf("env=%s auth=%s", os.Getenv(EnvSecret), auth)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server's process id."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		logCall("pid", "")
		return text(fmt.Sprint(os.Getpid())), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "A caption and a PNG."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		logCall("image", "")
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a red dot"},
			&mcp.ImageContent{MIMEType: "image/png", Data: PNG},
		}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "resource", Description: "An embedded markdown resource."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		logCall("resource", "")
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.md", MIMEType: "text/markdown", Text: "# Notes\n\n## Q3\n\nRevenue grew.\n"}},
		}}, nil, nil
	})
	type progressIn struct {
		Ack   string `json:"ack,omitempty" jsonschema:"a file the client creates once it has the reports; the answer waits for it"`
		Steps int    `json:"steps,omitempty" jsonschema:"how many steps to report, at once (2 unless set, at most 1000)"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Reports two steps of progress, then answers."}, func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
		logCall("progress", "")
		token := req.Params.GetProgressToken()
		steps := 2
		if in.Steps > 0 {
			steps = min(in.Steps, 1000)
		}
		for i := 1; i <= steps && token != nil; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(steps), Message: fmt.Sprintf("step %d", i)}); err != nil {
				return nil, nil, err
			}
		}
		// An SDK client may hand reports to its handler apart from the
		// answer (fsd's reads them in order): a test of a client's hook
		// says when it has them.
		for i := 0; in.Ack != "" && token != nil && i < 1000; i++ {
			if _, err := os.Stat(in.Ack); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		return text(fmt.Sprintf("done (token %v)", token != nil)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks the client for a name and a count (elicitation), and answers what it said."}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		// The protocol's multi round-trip form: the first answer asks,
		// the client calls again with the person's answer.
		res, ok := req.Params.InputResponses["form"].(*mcp.ElicitResult)
		if !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"form": &mcp.ElicitParams{Message: "Which name, and how many?", RequestedSchema: json.RawMessage(
				`{"type":"object","properties":{"name":{"type":"string","minLength":1},"count":{"type":"integer","default":2}},"required":["name"]}`)}}}, nil, nil
		}
		logCall("ask", res.Action)
		b, _ := json.Marshal(res.Content)
		return text(fmt.Sprintf("action=%s content=%s", res.Action, b)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "Asks the client's model a question (sampling) and answers what it said."}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		// The server reads a sampling answer in its with-tools form.
		res, ok := req.Params.InputResponses["q"].(*mcp.CreateMessageWithToolsResult)
		if !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.CreateMessageParams{MaxTokens: 50, SystemPrompt: "Answer with a number.",
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "What is 6 times 7?"}}}}}}, nil, nil
		}
		logCall("sample", "")
		var t *mcp.TextContent
		if len(res.Content) > 0 {
			t, _ = res.Content[0].(*mcp.TextContent)
		}
		if t == nil {
			return text("the model answered no text"), nil, nil
		}
		return text("model said: " + t.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Two MiB of text."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		logCall("big", "")
		return text(strings.Repeat("x", 2<<20)), nil, nil
	})
	return s
}

// ServeIfAsked serves the test server on stdio and exits when EnvServe is
// "stdio"; otherwise it returns. Call it first in TestMain.
func ServeIfAsked() {
	if os.Getenv(EnvServe) != "stdio" {
		return
	}
	err := Server(nil).Run(context.Background(), &mcp.StdioTransport{})
	if os.Getenv(EnvHang) == "1" {
		select {}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// HTTP serves a new test server over Streamable HTTP on 127.0.0.1 and
// returns it with its endpoint URL; Close it when done.
func HTTP(calls *atomic.Int64) *httptest.Server {
	srv := Server(calls)
	return httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
}
