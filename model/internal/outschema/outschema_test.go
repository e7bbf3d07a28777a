package outschema

import (
	"encoding/json"
	"testing"
)

func TestStrict(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string"}}}`, true},
		{`{"type":"object","additionalProperties":false,"required":[],"properties":{"a":{"type":"string"}}}`, false},
		{`{"type":"object","properties":{}}`, false},
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`, false},
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["b"],"properties":{"b":{"anyOf":[{"type":"string"},{"type":"null"}]}}}}}}`, true},
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string","not":{"const":"x"}}}}`, false},
		{`{"type":"object","additionalProperties":false,"anyOf":[{"required":[]}]}`, false},
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"$ref":"https://x/y.json"}}}`, false},
		{`{"type":"array"}`, false},
	} {
		if got := Strict(Decode(json.RawMessage(tc.schema))); got != tc.want {
			t.Errorf("Strict(%s) = %v, want %v", tc.schema, got, tc.want)
		}
	}
}

func TestRecursive(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`, false},
		{`{"type":"object","properties":{"a":{"$ref":"#"}}}`, true},
		{`{"$defs":{"x":{"properties":{"y":{"$ref":"#/$defs/y"}}},"y":{"items":{"$ref":"#/$defs/x"}}}}`, true},
		{`{"$defs":{"x":{"properties":{"y":{"$ref":"#/$defs/y"}}},"y":{"type":"string"}}}`, false},
	} {
		if got := recursive(Decode(json.RawMessage(tc.schema))); got != tc.want {
			t.Errorf("recursive(%s) = %v, want %v", tc.schema, got, tc.want)
		}
	}
}
