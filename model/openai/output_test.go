package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// An agent's output schema goes out as response_format json_schema:
// strict when the schema fits strict mode, guiding otherwise, and not at
// all when its root is not an object (the API refuses that).
func TestResponseFormat(t *testing.T) {
	closed := `{"type":"object","additionalProperties":false,"required":["total"],"properties":{"total":{"type":"integer"}}}`
	open := `{"type":"object","required":["total"],"properties":{"total":{"type":"integer"},"note":{"type":"string"}}}`
	for _, tc := range []struct {
		name   string
		out    *model.Output
		strict any // nil: no response_format
	}{
		{"closed schema is strict", &model.Output{Name: "collector", Schema: json.RawMessage(closed)}, true},
		{"open schema guides", &model.Output{Name: "collector", Schema: json.RawMessage(open)}, false},
		{"array root is not sent", &model.Output{Name: "lister", Schema: json.RawMessage(`{"type":"array"}`)}, nil},
		{"no output", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := conversation()
			req.Output = tc.out
			resp, sent := prov.Call(t, fakeserver.Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"m",
 "choices":[{"index":0,"message":{"role":"assistant","content":"{\"total\":3}"},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`}, req)
			if resp.Text != `{"total":3}` {
				t.Errorf("text = %q", resp.Text)
			}
			var body struct {
				ResponseFormat *struct {
					Type       string `json:"type"`
					JSONSchema struct {
						Name   string         `json:"name"`
						Strict bool           `json:"strict"`
						Schema map[string]any `json:"schema"`
					} `json:"json_schema"`
				} `json:"response_format"`
				Tools []any `json:"tools"`
			}
			if err := json.Unmarshal(sent, &body); err != nil {
				t.Fatal(err)
			}
			rf := body.ResponseFormat
			if tc.strict == nil {
				if rf != nil {
					t.Errorf("response_format sent: %+v", rf)
				}
				return
			}
			if rf == nil || rf.Type != "json_schema" || rf.JSONSchema.Name != tc.out.Name || rf.JSONSchema.Strict != tc.strict {
				t.Fatalf("response_format = %+v", rf)
			}
			var want map[string]any
			_ = json.Unmarshal(tc.out.Schema, &want)
			if !reflect.DeepEqual(rf.JSONSchema.Schema, want) {
				t.Errorf("schema sent %v, want %v", rf.JSONSchema.Schema, want)
			}
			if len(body.Tools) == 0 {
				t.Error("the tools went missing beside response_format")
			}
		})
	}
}

func TestSchemaName(t *testing.T) {
	for in, want := range map[string]string{"collector": "collector", "weekly report": "weekly_report", "": "output", "résumé": "r__sum__"} {
		if got := schemaName(in); got != want {
			t.Errorf("schemaName(%q) = %q, want %q", in, got, want)
		}
	}
}
