// Command server is the field-notes skill's MCP server: a small stdio
// server, built on the official Go SDK, that searches a team's field notes
// (notes.md, embedded). The skill runs it with `go run ./server`, so the
// example works offline from a checkout.
package main

import (
	"context"
	_ "embed"
	"fmt"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

//go:embed notes.md
var notes string

type searchIn struct {
	Query string `json:"query" jsonschema:"a word or phrase to look for, case-insensitive"`
}

type sectionIn struct {
	Heading string `json:"heading" jsonschema:"the heading of a section, as search results name it"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "field-notes", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Lines of the field notes that mention the query, each with its section."},
		func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
			return text(search(in.Query)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "section", Description: "One whole section of the field notes by its heading."},
		func(_ context.Context, _ *mcp.CallToolRequest, in sectionIn) (*mcp.CallToolResult, any, error) {
			body, ok := section(in.Heading)
			if !ok {
				r := text(fmt.Sprintf("no section %q; search first to find headings", in.Heading))
				r.IsError = true
				return r, nil, nil
			}
			return text(body), nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func search(q string) string {
	q = strings.ToLower(strings.TrimSpace(q))
	var out []string
	heading := ""
	for _, line := range strings.Split(notes, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			heading = h
			continue
		}
		if q != "" && strings.Contains(strings.ToLower(line), q) {
			out = append(out, fmt.Sprintf("[%s] %s", heading, strings.TrimSpace(line)))
		}
	}
	if len(out) == 0 {
		return fmt.Sprintf("nothing in the field notes mentions %q", q)
	}
	return strings.Join(out, "\n")
}

func section(heading string) (string, bool) {
	parts := strings.Split(notes, "\n## ")
	for _, p := range parts[1:] {
		h, body, _ := strings.Cut(p, "\n")
		if strings.EqualFold(strings.TrimSpace(h), strings.TrimSpace(heading)) {
			return strings.TrimSpace(body), true
		}
	}
	return "", false
}
