package gemini

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// An output schema goes as responseJsonSchema (with responseMimeType
// application/json) fitted to the keywords the API takes: constraints it
// cannot express are dropped, a const is a one-value enum, a $ref keeps
// only its $-keywords, and any root is fine. A schema whose shape would
// change (allOf, not, a recursive $ref) is not sent. fsd checks the answer
// against the whole schema in every case.
func TestResponseJSONSchema(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         string // "": no responseJsonSchema
	}{
		{"fitted",
			`{"type":"object","required":["total"],"properties":{"total":{"type":"integer","minimum":0,"multipleOf":2},"code":{"type":"string","pattern":"^[A-Z]+$","format":"email","minLength":2},"when":{"type":"string","format":"date-time"},"kind":{"const":"report"},"flag":{"enum":[true,false]},"tags":{"type":"array","minItems":2,"uniqueItems":true,"items":{"type":"string"}}},"additionalProperties":false}`,
			`{"type":"object","required":["total"],"properties":{"total":{"type":"integer","minimum":0},"code":{"type":"string"},"when":{"type":"string","format":"date-time"},"kind":{"enum":["report"]},"flag":{},"tags":{"type":"array","minItems":2,"items":{"type":"string"}}},"additionalProperties":false}`},
		{"local ref",
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/x","description":"an x"}},"$defs":{"x":{"type":"string","maxLength":3}}}`,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`},
		{"array root", `{"type":"array","items":{"type":"string"}}`, `{"type":"array","items":{"type":"string"}}`},
		{"allOf", `{"type":"object","allOf":[{"required":["x"]}]}`, ""},
		{"not", `{"type":"object","not":{"required":["x"]}}`, ""},
		{"recursive", `{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`, ""},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := conversation()
			req.Output = &model.Output{Name: "collector", Schema: json.RawMessage(tc.schema)}
			resp, sent := prov.Call(t, fakeserver.Reply{Body: `{"candidates":[{"content":{"role":"model","parts":[{"text":"{\"total\":3}"}]},"finishReason":"STOP","index":0}]}`}, req)
			if resp.Text != `{"total":3}` {
				t.Errorf("text = %q", resp.Text)
			}
			var body struct {
				Config *struct {
					MIME   string         `json:"responseMimeType"`
					Schema map[string]any `json:"responseJsonSchema"`
				} `json:"generationConfig"`
				Tools []any `json:"tools"`
			}
			if err := json.Unmarshal(sent, &body); err != nil {
				t.Fatal(err)
			}
			if len(body.Tools) == 0 {
				t.Error("the tools went missing beside the output schema")
			}
			if tc.want == "" {
				if body.Config != nil {
					t.Errorf("generationConfig sent: %+v", body.Config)
				}
				return
			}
			if body.Config == nil || body.Config.MIME != "application/json" {
				t.Fatalf("generationConfig = %+v", body.Config)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if got := body.Config.Schema; !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				t.Errorf("schema sent\n%s\nwant\n%s", g, tc.want)
			}
		})
	}
}

// MaxTokens is maxOutputTokens; without it and an output schema there is
// no generationConfig.
func TestMaxTokens(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody})
	defer srv.Close()
	m, err := New(Config{Model: "gemini-test", APIKey: testKey, BaseURL: srv.URL, MaxTokens: 512})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(t.Context(), conversation()); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.Unmarshal(srv.Requests()[0].Body, &body)
	if got := body["generationConfig"]; !reflect.DeepEqual(got, map[string]any{"maxOutputTokens": float64(512)}) {
		t.Errorf("generationConfig = %v", got)
	}
	_, sent := prov.Call(t, fakeserver.Reply{Body: okBody}, conversation())
	body = nil
	_ = json.Unmarshal(sent, &body)
	if _, ok := body["generationConfig"]; ok {
		t.Error("generationConfig sent with nothing in it")
	}
}
