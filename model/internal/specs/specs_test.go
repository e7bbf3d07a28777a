package specs

import (
	"strings"
	"testing"
)

// Every schema compiles and cites where it was written from.
func TestSchemasCompileAndCite(t *testing.T) {
	names := Names()
	if len(names) < 2 {
		t.Fatalf("schemas: %v", names)
	}
	for _, n := range names {
		if _, err := Compile(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		raw, _ := files.ReadFile("schemas/" + n + ".json")
		if !strings.Contains(string(raw), `"$comment"`) {
			t.Errorf("%s: no $comment citing its source", n)
		}
	}
}

// The schemas tell a documented body from a misspelt one: the closed
// objects are what make a client's typo fail.
func TestSchemasRefuseWhatTheReferenceDoesNot(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		ok         bool
	}{
		{"openai-chat-completions-request", `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`, true},
		{"openai-chat-completions-request", `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}],"prompt_cache_keys":"k"}`, false},
		{"openai-chat-completions-request", `{"model":"gpt-x","messages":[{"role":"tool","content":"r"}]}`, false},
		{"openai-chat-completions-request", `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"has space"}}]}`, false},
		{"openai-responses-request", `{"model":"gpt-x","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],"store":false}`, true},
		{"openai-responses-request", `{"model":"gpt-x","input":"hi","prompt_cache_keys":"k"}`, false},
		{"openai-responses-request", `{"model":"gpt-x","input":"hi","tools":[{"type":"function","name":"f","parameters":{}}]}`, false},
		{"openai-responses-request", `{"model":"gpt-x","input":"hi","text":{"format":{"type":"json_schema","name":"has space","schema":{}}}}`, false},
		{"openai-responses-request", `{"model":"gpt-x","input":[{"type":"reasoning","encrypted_content":"e"}]}`, false},
		{"anthropic-messages-request", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, true},
		{"anthropic-messages-request", `{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}`, false},
		{"anthropic-messages-request", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, false},
		{"anthropic-messages-request", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","cache_control":{"type":"persistent"}}]}]}`, false},
		{"gemini-generate-content-request", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"string"}}}`, true},
		{"gemini-generate-content-request", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"responseJsonSchema":{"type":"string"}}}`, false},
		{"gemini-generate-content-request", `{"contents":[{"role":"assistant","parts":[{"text":"hi"}]}]}`, false},
		{"gemini-generate-content-request", `{"contents":[{"role":"user","parts":[]}]}`, false},
		{"gemini-generate-content-request", `{"contents":[{"role":"user","parts":[{"text":""}]}]}`, false},
		{"gemini-generate-content-request", `{"contents":[{"role":"user","parts":[{"text":"hi","inlineData":{"mimeType":"image/png","data":"AA=="}}]}]}`, false},
		{"gemini-generate-content-request", `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"a"},"thoughtSignature":"not base64!"}]}]}`, false},
	} {
		err := Check(tt.name, []byte(tt.body))
		if (err == nil) != tt.ok {
			t.Errorf("%s %s: err = %v, want ok %v", tt.name, tt.body, err, tt.ok)
		}
	}
}
