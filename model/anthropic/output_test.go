package anthropic

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// An agent's output schema goes out as output_config.format json_schema,
// fitted to the grammar: constraints it cannot express dropped (fsd
// checks them), objects closed. A schema that cannot fit is not sent.
func TestOutputConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		want   string // "": no output_config
	}{
		{"fitted",
			`{"type":"object","required":["total"],"properties":{"total":{"type":"integer","minimum":0},"code":{"type":"string","pattern":"^[A-Z]+$","format":"email"},"tags":{"type":"array","minItems":2,"items":{"type":"object","properties":{"k":{"type":"string","format":"color"}}}}}}`,
			`{"type":"object","additionalProperties":false,"required":["total"],"properties":{"total":{"type":"integer"},"code":{"type":"string","format":"email"},"tags":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"k":{"type":"string"}}}}}}`},
		{"local non-recursive ref",
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string","maxLength":3}}}`,
			`{"type":"object","additionalProperties":false,"properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`},
		{"open map", `{"type":"object","additionalProperties":{"type":"number"}}`, ""},
		{"recursive", `{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`, ""},
		{"not", `{"type":"object","not":{"required":["x"]}}`, ""},
		{"array root", `{"type":"array","items":{"type":"string"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := conversation()
			req.Output = &model.Output{Name: "collector", Schema: json.RawMessage(tc.schema)}
			resp, sent := prov.Call(t, fakeserver.Reply{Body: `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"{\"total\":3}"}],
 "stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`}, req)
			if resp.Text != `{"total":3}` {
				t.Errorf("text = %q", resp.Text)
			}
			var body struct {
				OutputConfig *struct {
					Format struct {
						Type   string         `json:"type"`
						Schema map[string]any `json:"schema"`
					} `json:"format"`
				} `json:"output_config"`
				Tools []any `json:"tools"`
			}
			if err := json.Unmarshal(sent, &body); err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if body.OutputConfig != nil {
					t.Errorf("output_config sent: %+v", body.OutputConfig)
				}
				return
			}
			if body.OutputConfig == nil || body.OutputConfig.Format.Type != "json_schema" {
				t.Fatalf("output_config = %+v", body.OutputConfig)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if got := body.OutputConfig.Format.Schema; !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				t.Errorf("schema sent\n%s\nwant\n%s", g, tc.want)
			}
			if len(body.Tools) == 0 {
				t.Error("the tools went missing beside output_config")
			}
		})
	}
	// Without an output schema there is no output_config.
	_, sent := prov.Call(t, fakeserver.Reply{Body: `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`}, conversation())
	var body map[string]any
	_ = json.Unmarshal(sent, &body)
	if _, ok := body["output_config"]; ok {
		t.Error("output_config sent without an output schema")
	}
}
