package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A Gemini run end to end, stopped and resumed: the thought signature the
// first answer's call came with goes back with that call in the next
// request, and in the same request after `fsd resume` — which replays the
// first answer from the journal — beside the call's id and its result's.
func TestGeminiSignatureAcrossResume(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, string(raw))
		mu.Unlock()
		// The CLI streams: each answer is one event.
		if r.URL.Path != "/v1beta/models/gemini-test:streamGenerateContent" || r.URL.RawQuery != "alt=sse" || r.Header.Get("X-Goog-Api-Key") != "AIza-test" {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusNotFound)
			return
		}
		answer := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Welcome aboard, Ada!"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":5}}`
		switch n {
		case 0:
			answer = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"read_skill","args":{"id":"greeter"}},"thoughtSignature":"c2lnLTE="}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":5}}`
		case 1:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":400,"message":"stopped by the test","status":"INVALID_ARGUMENT"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+answer+"\r\n\r\n")
	}))
	defer srv.Close()
	t.Setenv("GEMINI_API_KEY", "AIza-test")
	t.Setenv("GEMINI_BASE_URL", srv.URL)
	runs := filepath.Join(t.TempDir(), "runs")
	code, _, errs := fsd(t, "run", helloWorkflow(t, false), "--model", "gemini/gemini-test", "--runs-dir", runs)
	if code == exitOK || !strings.Contains(errs, "stopped by the test") {
		t.Fatalf("first run: exit %d: %s", code, errs)
	}
	dirs, _ := os.ReadDir(runs)
	if len(dirs) != 1 {
		t.Fatalf("%d runs", len(dirs))
	}
	code, out, errs := fsd(t, "resume", dirs[0].Name(), "--runs-dir", runs)
	if code != exitOK || !strings.Contains(out, "Welcome aboard, Ada!") {
		t.Fatalf("resume: exit %d: %s%s", code, out, errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 3: the first answer is not asked for again", len(bodies))
	}
	for i, b := range bodies[1:] {
		var body struct {
			Contents []struct {
				Role  string `json:"role"`
				Parts []struct {
					FunctionCall *struct {
						ID, Name string
					} `json:"functionCall"`
					FunctionResponse *struct {
						ID, Name string
					} `json:"functionResponse"`
					ThoughtSignature string `json:"thoughtSignature"`
				} `json:"parts"`
			} `json:"contents"`
		}
		if err := json.Unmarshal([]byte(b), &body); err != nil {
			t.Fatal(err)
		}
		var callID, sig, resultID string
		for _, c := range body.Contents {
			for _, p := range c.Parts {
				if p.FunctionCall != nil && p.FunctionCall.Name == "read_skill" {
					callID, sig = p.FunctionCall.ID, p.ThoughtSignature
				}
				if p.FunctionResponse != nil && p.FunctionResponse.Name == "read_skill" {
					resultID = p.FunctionResponse.ID
				}
			}
		}
		if sig != "c2lnLTE=" || callID == "" || resultID != callID {
			t.Errorf("request %d: read_skill call %q with signature %q, its result %q; want the signature back and one id", i+2, callID, sig, resultID)
		}
	}
}
