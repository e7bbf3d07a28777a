package gemini

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/internal/specs"
)

// Every request body the client can produce (tools, images, typed output,
// caching, streaming, the edges of a transcript) validates against the
// schema written from Google's generateContent reference (M20), and so do
// the bodies of this package's own cases: thought signatures, calls
// another model made, a message of an image and no text.
func TestRequestsMatchPublishedSpec(t *testing.T) {
	for name, body := range prov.Bodies(t) {
		t.Run(name, func(t *testing.T) { specs.Validate(t, "gemini-generate-content-request", body) })
	}
	for name, req := range map[string]*model.Request{
		"signatures":     conversation(),
		"an empty input": {Context: "You welcome new colleagues.", Messages: []model.Message{{Role: model.User}}},
		"an image alone, an empty line": {Messages: []model.Message{
			{Role: model.User, Media: []model.Media{{MIME: "image/png", Data: []byte("\x89PNG")}}},
			{Role: model.Context},
		}},
		"foreign calls": {Messages: []model.Message{
			{Role: model.User, Text: "Go."},
			{Role: model.Assistant, Calls: []model.ToolCall{{ID: "toolu_1", Name: "a", Args: json.RawMessage(`"broken"`)}}},
			{Role: model.Tool, CallID: "toolu_1", Name: "a", Text: "bad arguments", IsError: true},
		}},
	} {
		_, sent := prov.Call(t, fakeserver.Reply{Body: okBody}, req)
		t.Run(name, func(t *testing.T) { specs.Validate(t, "gemini-generate-content-request", sent) })
	}
}

// Responses shaped like the examples of Google's reference and guides
// (a text answer of a thinking model, a function call with its thought
// signature, a stream whose events end in \r\n\r\n, a blocked prompt)
// parse to the answers they show.
func TestReferenceResponses(t *testing.T) {
	sig := "CiQB0e2Kb3mYl7Mnz1b2bEJ0ixkJnCPbB4gGiVTmLNBq3Qd8JRoKZAHR7YpvA1Pq"
	h := sha256.Sum256([]byte(sig))
	id := "sig_" + hex.EncodeToString(h[:8])
	prov.References(t, []providertest.Reference{
		{File: "text.json", Want: &model.Response{Text: "AI learns patterns from data to make predictions or decisions.",
			Usage: model.Usage{InputTokens: 8, OutputTokens: 11 + 1083, ReasoningTokens: 1083}, ID: "rL7nZ6K0Jp3gz7IP0aS1oQ8", Served: "gemini-2.5-flash", FinishReason: "STOP"}},
		{File: "function_call.json", Want: &model.Response{
			Calls: []model.ToolCall{{ID: id, Name: "schedule_meeting",
				Args: json.RawMessage(`{
                "attendees": ["Bob", "Alice"],
                "date": "2025-03-27",
                "time": "10:00",
                "topic": "Q3 planning"
              }`)}},
			Usage: model.Usage{InputTokens: 106, OutputTokens: 37 + 80, ReasoningTokens: 80},
			State: &model.State{Model: "gemini/gemini-test", Data: json.RawMessage(`{"calls":{"` + id + `":"` + sig + `"}}`)},
			ID:    "7b7nZ5WIMpuaz7IPsr2hmQ4", Served: "gemini-3-flash-preview", FinishReason: "STOP"}},
		{File: "streaming.sse", Want: &model.Response{Text: "The sky is blue because of Rayleigh scattering.",
			Usage: model.Usage{InputTokens: 10, OutputTokens: 9 + 404, ReasoningTokens: 404}, ID: "CL_nZ_3oKPrgz7IP2ZS42Ag", Served: "gemini-2.5-flash", FinishReason: "STOP"}},
		{File: "blocked.json", WantErr: "gemini: the prompt was blocked (SAFETY)"},
	})
}

// A request's bound on its answer is sent as maxOutputTokens.
func TestRequestBound(t *testing.T) {
	prov.Bound(t, func(b map[string]any) any {
		gc, _ := b["generationConfig"].(map[string]any)
		return gc["maxOutputTokens"]
	})
}
