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

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-process OTLP/HTTP trace receiver: it decodes
// every export request's protobuf and keeps the spans and raw bodies.
type otlpReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	spans  []*tracepb.Span
	bodies [][]byte
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rcv := &otlpReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want protobuf at /v1/traces", http.StatusBadRequest)
			return
		}
		// TracesData has ExportTraceServiceRequest's wire form, without
		// the collector package's gRPC.
		var req tracepb.TracesData
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		rcv.bodies = append(rcv.bodies, body)
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rcv.spans = append(rcv.spans, ss.Spans...)
			}
		}
		rcv.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf") // an empty ExportTraceServiceResponse
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

func attr(s *tracepb.Span, key string) (string, int64, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue(), kv.Value.GetIntValue(), true
		}
	}
	return "", 0, false
}

func str(s *tracepb.Span, key string) string { v, _, _ := attr(s, key); return v }

// A run with a board, traced: the span tree is run → host agent → its
// chats and tool calls; runBoard's tool span → each task's agent → its
// chats and tool calls; names and gen_ai attributes per the GenAI
// conventions; token counts add up to run.json's. No prompt or result
// text is in a span without --otel-content; with it, a planted key is
// masked.
func TestTracesOfARunWithABoard(t *testing.T) {
	const secret = "sk-planted-otel-9f8e7d6c5b4a"
	t.Setenv("OPENAI_API_KEY", secret)
	input := "Prepare the sales brief for 2026-W47. My key is " + secret

	rcv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	runs := t.TempDir()
	code, _, errs := fsd(t, "run", "../../examples/conversation.workflow.yaml", "--runs-dir", runs, "-i", input)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	byID := map[string]*tracepb.Span{}
	children := map[string][]*tracepb.Span{}
	var root *tracepb.Span
	for _, s := range rcv.spans {
		byID[string(s.SpanId)] = s
	}
	for _, s := range rcv.spans {
		if len(s.ParentSpanId) == 0 {
			if root != nil {
				t.Errorf("two root spans: %s and %s", root.Name, s.Name)
			}
			root = s
			continue
		}
		if byID[string(s.ParentSpanId)] == nil {
			t.Errorf("span %s has a parent that was not exported", s.Name)
		}
		children[string(s.ParentSpanId)] = append(children[string(s.ParentSpanId)], s)
	}
	if root == nil || root.Name != "invoke_workflow weekly-conversation" || str(root, "gen_ai.operation.name") != "invoke_workflow" {
		t.Fatalf("root span: %v", root)
	}
	runID := str(root, "gen_ai.conversation.id")
	kids := children[string(root.SpanId)]
	if len(kids) != 1 || kids[0].Name != "invoke_agent host" || str(kids[0], "gen_ai.operation.name") != "invoke_agent" {
		t.Fatalf("the run's child should be the host agent: %v", kids)
	}
	host := kids[0]
	var inTotal, outTotal int64
	var tasks []*tracepb.Span
	chats := 0
	var walk func(agent *tracepb.Span)
	walk = func(agent *tracepb.Span) {
		for _, s := range children[string(agent.SpanId)] {
			if str(s, "gen_ai.conversation.id") != runID {
				t.Errorf("%s: conversation id %q, want %q", s.Name, str(s, "gen_ai.conversation.id"), runID)
			}
			switch str(s, "gen_ai.operation.name") {
			case "chat":
				chats++
				if s.Name != "chat scripted" || str(s, "gen_ai.request.model") != "scripted" || s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
					t.Errorf("chat span %q model %q kind %v", s.Name, str(s, "gen_ai.request.model"), s.Kind)
				}
				_, in, ok1 := attr(s, "gen_ai.usage.input_tokens")
				_, out, ok2 := attr(s, "gen_ai.usage.output_tokens")
				if !ok1 || !ok2 || in <= 0 {
					t.Errorf("chat span without token counts")
				}
				inTotal, outTotal = inTotal+in, outTotal+out
			case "execute_tool":
				if s.Name != "execute_tool "+str(s, "gen_ai.tool.name") || str(s, "gen_ai.tool.call.id") == "" {
					t.Errorf("tool span %q: tool %q id %q", s.Name, str(s, "gen_ai.tool.name"), str(s, "gen_ai.tool.call.id"))
				}
				for _, w := range children[string(s.SpanId)] {
					if s.Name != "execute_tool runBoard" || str(w, "gen_ai.operation.name") != "invoke_agent" {
						t.Errorf("%s under %s", w.Name, s.Name)
						continue
					}
					tasks = append(tasks, w)
					walk(w)
				}
			default:
				t.Errorf("unexpected span %s under %s", s.Name, agent.Name)
			}
		}
	}
	walk(host)
	if len(tasks) != 2 {
		t.Fatalf("%d task agent spans under runBoard, want 2", len(tasks))
	}
	for _, w := range tasks {
		if str(w, "fsd.task.id") == "" || !strings.HasPrefix(str(w, "gen_ai.agent.name"), "weekly-report/") || w.Name != "invoke_agent "+str(w, "gen_ai.agent.name") {
			t.Errorf("task span %q: task %q agent %q", w.Name, str(w, "fsd.task.id"), str(w, "gen_ai.agent.name"))
		}
	}
	var sum struct {
		In  int64 `json:"input_tokens"`
		Out int64 `json:"output_tokens"`
	}
	dirs, _ := filepath.Glob(filepath.Join(runs, "*", "run.json"))
	if len(dirs) != 1 {
		t.Fatalf("%d runs", len(dirs))
	}
	b, _ := os.ReadFile(dirs[0])
	_ = json.Unmarshal(b, &sum)
	if chats < 5 || inTotal != sum.In || outTotal != sum.Out {
		t.Errorf("%d chat spans with %d in, %d out tokens; run.json says %d in, %d out", chats, inTotal, outTotal, sum.In, sum.Out)
	}
	for _, body := range rcv.bodies {
		for _, text := range []string{"Prepare the sales brief", "reporting assistant", secret} {
			if strings.Contains(string(body), text) {
				t.Errorf("a span carries %q without --otel-content", text)
			}
		}
	}

	// With --otel-content the text is there, the key is not.
	rcv2 := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv2.URL)
	code, _, errs = fsd(t, "run", "../../examples/conversation.workflow.yaml", "--runs-dir", t.TempDir(), "-i", input, "--otel-content")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	all := ""
	for _, body := range rcv2.bodies {
		all += string(body)
	}
	if !strings.Contains(all, "Prepare the sales brief") || !strings.Contains(all, "gen_ai.input.messages") || !strings.Contains(all, "gen_ai.tool.call.result") {
		t.Error("--otel-content: no prompt or result text in the spans")
	}
	if strings.Contains(all, secret) || !strings.Contains(all, "[REDACTED]") {
		t.Error("--otel-content: the planted key is not masked")
	}
}
