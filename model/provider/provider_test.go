package provider

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/anthropic"
	"github.com/fsdrun/fsd/model/cassette"
	"github.com/fsdrun/fsd/model/gemini"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/openai"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Spec
		wantErr string
	}{
		{in: "openai/gpt-5.4-mini", want: Spec{"openai", "gpt-5.4-mini"}},
		{in: "anthropic/claude-sonnet-4-5", want: Spec{"anthropic", "claude-sonnet-4-5"}},
		{in: "openai/library/llama3.2:3b", want: Spec{"openai", "library/llama3.2:3b"}},
		{in: "openai-responses/gpt-5.4", want: Spec{"openai-responses", "gpt-5.4"}},
		{in: " scripted ", want: Spec{Provider: "scripted"}},
		{in: "", wantErr: `no model: set "model:" in the workflow or pass --model`},
		{in: "gpt-4o", wantErr: `model "gpt-4o": want provider/model, e.g. openai/gpt-5.4-mini`},
		{in: "gemini/gemini-2.5-flash", want: Spec{"gemini", "gemini-2.5-flash"}},
		{in: "mistral/large", wantErr: `model "mistral/large": unknown provider "mistral" (known: openai, openai-responses, anthropic, gemini, scripted)`},
		{in: "antropic/claude-x", wantErr: `model "antropic/claude-x": unknown provider "antropic" (known: openai, openai-responses, anthropic, gemini, scripted); did you mean "anthropic"?`},
		{in: "OpenAI/gpt-4o", wantErr: `unknown provider "OpenAI" (known: openai, openai-responses, anthropic, gemini, scripted); did you mean "openai"?`},
		{in: "scripted/x", wantErr: `model "scripted/x": the scripted model takes no name; write scripted`},
		{in: "openai/", wantErr: `model "openai/": the model name after "openai/" is empty or has spaces`},
		{in: "openai/gpt 4", wantErr: `the model name after "openai/" is empty or has spaces`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is more than one line: %q", err)
				}
				// New refuses the same string the same way: no
				// provider is built in place of one it does not know.
				if m, nerr := New(tt.in, envOf(map[string]string{"OPENAI_API_KEY": "k-123456", "ANTHROPIC_API_KEY": "k-123456"}), Options{}); m != nil || nerr == nil || nerr.Error() != err.Error() {
					t.Errorf("New = %T, %v; want Parse's error", m, nerr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		model   string
		env     map[string]string
		wantErr string
	}{
		{model: "scripted"},
		{model: "openai/gpt-x", env: map[string]string{"OPENAI_API_KEY": "sk-123456"}},
		{model: "openai/gpt-x", wantErr: "model openai/gpt-x: OPENAI_API_KEY is not set; export your API key, set OPENAI_BASE_URL for a local server that needs none, or use --model scripted to run offline"},
		// A local OpenAI-compatible server needs no key.
		{model: "openai/llama3", env: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}},
		{model: "anthropic/claude-x", env: map[string]string{"OPENAI_API_KEY": "sk-123456"}, wantErr: "model anthropic/claude-x: ANTHROPIC_API_KEY is not set"},
		{model: "openai/gpt-x", env: map[string]string{"OPENAI_API_KEY": "sk-123456", "OPENAI_BASE_URL": "localhost:11434"},
			wantErr: `model openai/gpt-x: OPENAI_BASE_URL="localhost:11434" is not an http(s) URL`},
		{model: "nope/x", wantErr: `unknown provider "nope"`},
		{model: "gemini/gemini-x", env: map[string]string{"GOOGLE_API_KEY": "AIza-123456"}},
		{model: "gemini/gemini-x", env: map[string]string{"OPENAI_API_KEY": "sk-123456"},
			wantErr: "model gemini/gemini-x: GEMINI_API_KEY (or GOOGLE_API_KEY) is not set; export your API key, set GEMINI_BASE_URL for a local server that needs none"},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.wantErr, func(t *testing.T) {
			err := Check(tt.model, envOf(tt.env))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			// New fails the same way, before any request.
			if _, nerr := New(tt.model, envOf(tt.env), Options{}); tt.wantErr != "" && (nerr == nil || nerr.Error() != err.Error()) {
				t.Errorf("New err = %v, Check err = %v", nerr, err)
			}
		})
	}
}

func TestNewScripted(t *testing.T) {
	if _, err := New("scripted", nil, Options{}); !errors.Is(err, ErrScripted) {
		t.Fatalf("err = %v, want ErrScripted", err)
	}
	want := model.Func(func(context.Context, *model.Request) (*model.Response, error) { return &model.Response{Text: "s"}, nil })
	got, err := New("scripted", nil, Options{Scripted: func() (model.Model, error) { return want, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := got.Generate(context.Background(), &model.Request{}); r.Text != "s" {
		t.Errorf("scripted factory not used")
	}
}

func TestNewBuildsEachProvider(t *testing.T) {
	openaiBody := `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi from openai"}}]}`
	anthropicBody := `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"hi from anthropic"}],"usage":{"input_tokens":1,"output_tokens":1}}`
	geminiBody := `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi from gemini"}]},"finishReason":"STOP","index":0}]}`
	responsesBody := `{"id":"r","status":"completed","output":[{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"hi from responses"}]}]}`
	for _, tt := range []struct{ model, keyVar, urlVar, body, path, want string }{
		{"openai/gpt-x", "OPENAI_API_KEY", "OPENAI_BASE_URL", openaiBody, "/v1/chat/completions", "hi from openai"},
		{"anthropic/claude-x", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", anthropicBody, "/v1/messages", "hi from anthropic"},
		{"gemini/gemini-x", "GEMINI_API_KEY", "GEMINI_BASE_URL", geminiBody, "/v1beta/models/gemini-x:generateContent", "hi from gemini"},
		{"openai-responses/gpt-x", "OPENAI_API_KEY", "OPENAI_BASE_URL", responsesBody, "/v1/responses", "hi from responses"},
	} {
		t.Run(tt.model, func(t *testing.T) {
			srv := fakeserver.New(fakeserver.Reply{Body: tt.body})
			defer srv.Close()
			base := srv.URL
			if strings.HasPrefix(tt.model, "openai") {
				base += "/v1"
			}
			m, err := New(tt.model, envOf(map[string]string{tt.keyVar: "key-123456", tt.urlVar: base}), Options{})
			if err != nil {
				t.Fatal(err)
			}
			switch tt.model {
			case "openai/gpt-x":
				if _, ok := m.(*openai.Model); !ok {
					t.Errorf("built %T", m)
				}
			case "gemini/gemini-x":
				if _, ok := m.(*gemini.Model); !ok {
					t.Errorf("built %T", m)
				}
			case "openai-responses/gpt-x":
				if _, ok := m.(*openai.Responses); !ok {
					t.Errorf("built %T", m)
				}
			default:
				if _, ok := m.(*anthropic.Model); !ok {
					t.Errorf("built %T", m)
				}
			}
			resp, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tt.want || srv.Requests()[0].Path != tt.path {
				t.Errorf("text %q from %s", resp.Text, srv.Requests()[0].Path)
			}
		})
	}
}

// TestNoKeyAnywhere drives both providers through every failure the tests
// know, with a logger and a recorder attached, and greps everything fsd
// produced — errors, log lines, the recording — for the key.
func TestNoKeyAnywhere(t *testing.T) {
	const key = "sk-LEAKCHECK-9f8e7d6c5b4a"
	var logs, rec bytes.Buffer
	var errs []string
	logger := zerolog.New(&logs).Level(zerolog.DebugLevel)
	echoKey := `{"error":{"type":"authentication_error","message":"invalid key ` + key + `"}}`
	replies := []fakeserver.Reply{
		{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"error":{"message":"slow down, ` + key + `"}}`},
		{Status: 500, Body: `{"error":{"message":"boom ` + key + `"}}`},
		{Status: 401, Body: echoKey},
		{Status: 400, Body: `not json at all ` + key},
		{Body: `{"id":"` + key + `","choices":[]}`},
		{Body: `{"broken` + key},
		{Stall: true},
	}
	for _, prov := range []struct{ model, keyVar, urlVar, suffix string }{
		{"openai/gpt-x", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1"},
		{"anthropic/claude-x", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", ""},
		{"gemini/gemini-x", "GOOGLE_API_KEY", "GEMINI_BASE_URL", ""},
		{"openai-responses/gpt-x", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1"},
	} {
		for _, stream := range []bool{false, true} {
			srv := fakeserver.New(replies...)
			env := envOf(map[string]string{prov.keyVar: key, prov.urlVar: srv.URL + prov.suffix})
			m, err := New(prov.model, env, Options{
				MaxRetries: 1, Timeout: 100 * time.Millisecond, Logger: &logger,
				Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
			})
			if err != nil {
				t.Fatal(err)
			}
			r := cassette.NewRecorder(m, &rec, cassette.WithSecrets(redact.FromEnv([]string{prov.keyVar + "=" + key})...))
			for i := range 6 {
				req := &model.Request{Context: "ctx", Messages: []model.Message{{Role: model.User, Text: "hi"}}, Caller: model.Caller{Step: i}}
				if stream {
					req.OnText = func(string) {}
				}
				if _, err := r.Generate(context.Background(), req); err != nil {
					errs = append(errs, err.Error())
				}
			}
			srv.Close()
		}
	}
	for _, missing := range []string{"openai/x", "anthropic/x", "gemini/x", "openai"} {
		if _, err := New(missing, envOf(map[string]string{"OTHER_KEY": key}), Options{}); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) < 10 || logs.Len() == 0 || rec.Len() == 0 {
		t.Fatalf("the battery produced too little to check: %d errors, %d log bytes, %d recording bytes", len(errs), logs.Len(), rec.Len())
	}
	all := strings.Join(errs, "\n") + "\n" + logs.String() + "\n" + rec.String()
	if strings.Contains(all, key) {
		t.Fatalf("the API key leaked:\n%s", all)
	}
	if !strings.Contains(all, "[REDACTED]") {
		t.Errorf("the key was echoed by the server but nothing was masked:\n%s", all)
	}
}

// TestBaseURLWithoutKey: a base URL without a key (Ollama, vLLM,
// llama.cpp) builds a model that sends no credentials header, and says so
// once in the log.
func TestBaseURLWithoutKey(t *testing.T) {
	openaiBody := `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`
	anthropicBody := `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":1}}`
	for _, tt := range []struct{ model, urlVar, keyVar, header, body, suffix string }{
		{"openai/llama3", "OPENAI_BASE_URL", "OPENAI_API_KEY", "Authorization", openaiBody, "/v1"},
		{"anthropic/local", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "X-Api-Key", anthropicBody, ""},
		{"gemini/local", "GEMINI_BASE_URL", "GEMINI_API_KEY (or GOOGLE_API_KEY)", "X-Goog-Api-Key",
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP","index":0}]}`, ""},
	} {
		t.Run(tt.model, func(t *testing.T) {
			srv := fakeserver.New(fakeserver.Reply{Body: tt.body}, fakeserver.Reply{Body: tt.body})
			defer srv.Close()
			var logs bytes.Buffer
			logger := zerolog.New(&logs)
			m, err := New(tt.model, envOf(map[string]string{tt.urlVar: srv.URL + tt.suffix}), Options{Logger: &logger})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}}); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range srv.Requests() {
				if v, ok := r.Header[tt.header]; ok {
					t.Errorf("%s sent without a key: %q", tt.header, v)
				}
			}
			if n := strings.Count(logs.String(), tt.keyVar+" is not set"); n != 1 {
				t.Errorf("said %d times, want once:\n%s", n, logs.String())
			}
		})
	}
}

// GEMINI_API_KEY wins over GOOGLE_API_KEY when both are set: the key
// named for this API is the one meant for it.
func TestGeminiKeyPrecedence(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"GEMINI_API_KEY": "gemini-key-1", "GOOGLE_API_KEY": "google-key-2"}, "gemini-key-1"},
		{map[string]string{"GEMINI_API_KEY": " ", "GOOGLE_API_KEY": "google-key-2"}, "google-key-2"},
	} {
		srv := fakeserver.New(fakeserver.Reply{Body: `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP","index":0}]}`})
		tt.env["GEMINI_BASE_URL"] = srv.URL
		m, err := New("gemini/gemini-x", envOf(tt.env), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[0].Header.Get("X-Goog-Api-Key"); got != tt.want {
			t.Errorf("env %v: key sent %q, want %q", tt.env, got, tt.want)
		}
		srv.Close()
	}
}

// TestRegistryIsTheFileFormatsList: spec checks a manifest's providers
// against model.ProviderNames, so a provider the registry has and the
// list lacks would be refused by fsd validate, and one the list has and
// the registry lacks would pass fsd validate and fail fsd run.
func TestRegistryIsTheFileFormatsList(t *testing.T) {
	var got []string
	for _, p := range Providers() {
		got = append(got, p.Name)
	}
	if want := model.ProviderNames(); !slices.Equal(got, want) {
		t.Errorf("registry %v, model.ProviderNames %v", got, want)
	}
}

// A key the server refuses (401) or does not allow (403) is named by the
// variable it came from, so the error says what to fix; a server that
// wants a key fsd did not send is told which variable to set. The key
// itself is never in the error.
func TestRefusedKeyNamesItsVariable(t *testing.T) {
	const key = "sk-test-SECRET123"
	refused := `{"error":{"message":"Incorrect API key provided: ` + key + `"}}`
	for _, tt := range []struct {
		model  string
		env    map[string]string
		status int
		want   string
	}{
		{"openai/gpt-x", map[string]string{"OPENAI_API_KEY": key}, 401, "(the server refused the API key: check OPENAI_API_KEY)"},
		{"openai-responses/gpt-x", map[string]string{"OPENAI_API_KEY": key}, 401, "(the server refused the API key: check OPENAI_API_KEY)"},
		{"anthropic/claude-x", map[string]string{"ANTHROPIC_API_KEY": key}, 401, "(the server refused the API key: check ANTHROPIC_API_KEY)"},
		{"anthropic/claude-x", map[string]string{"ANTHROPIC_API_KEY": key}, 403, "(the API key is not allowed this request: check ANTHROPIC_API_KEY)"},
		{"gemini/gemini-x", map[string]string{"GOOGLE_API_KEY": key}, 403, "(the API key is not allowed this request: check GOOGLE_API_KEY)"},
		{"gemini/gemini-x", map[string]string{"GEMINI_API_KEY": key, "GOOGLE_API_KEY": "other"}, 401, "(the server refused the API key: check GEMINI_API_KEY)"},
		{"openai/gpt-x", map[string]string{}, 401, "(no API key was sent: set OPENAI_API_KEY)"},
		// Google refuses a wrong key with 400 INVALID_ARGUMENT.
		{"gemini/gemini-x", map[string]string{"GEMINI_API_KEY": key}, 400, "(the server refused the API key: check GEMINI_API_KEY)"},
		{"gemini/gemini-x", map[string]string{}, 403, "(no API key was sent: set GEMINI_API_KEY (or GOOGLE_API_KEY))"},
	} {
		body := refused
		if tt.status == 400 {
			body = `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`
		}
		srv := fakeserver.New(fakeserver.Reply{Status: tt.status, Body: body})
		env := maps.Clone(tt.env)
		env[map[string]string{"openai": "OPENAI_BASE_URL", "openai-responses": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL", "gemini": "GEMINI_BASE_URL"}[strings.Split(tt.model, "/")[0]]] = srv.URL
		m, err := New(tt.model, envOf(env), Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}})
		srv.Close()
		leaked := len(tt.env) > 0 && strings.Contains(err.Error(), key) // without a key the echo is the server's own text
		if err == nil || !strings.HasSuffix(err.Error(), tt.want) || leaked || len(srv.Requests()) != 1 {
			t.Errorf("%s %v, HTTP %d: err = %v after %d requests; want one, ending %q", tt.model, tt.env, tt.status, err, len(srv.Requests()), tt.want)
		}
	}
}
