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

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
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
	// instance is the service.instance.id of each span's resource, by
	// span id.
	instance map[string]string
	metrics  []*metricspb.Metric
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rcv := &otlpReceiver{instance: map[string]string{}}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/metrics" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			var md metricspb.MetricsData // ExportMetricsServiceRequest's wire form
			if err := proto.Unmarshal(body, &md); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			rcv.mu.Lock()
			for _, rm := range md.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					rcv.metrics = append(rcv.metrics, sm.Metrics...)
				}
			}
			rcv.mu.Unlock()
			w.Header().Set("Content-Type", "application/x-protobuf")
			return
		}
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
			inst := ""
			for _, kv := range rs.Resource.GetAttributes() {
				if kv.Key == "service.instance.id" {
					inst = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				rcv.spans = append(rcv.spans, ss.Spans...)
				for _, sp := range ss.Spans {
					rcv.instance[string(sp.SpanId)] = inst
				}
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
	// The GenAI metrics went to the same collector when the run ended:
	// one duration per chat, the token histograms adding up to the spans'.
	var durations uint64
	var tokens float64
	for _, m := range rcv.metrics {
		for _, dp := range m.GetHistogram().GetDataPoints() {
			switch m.Name {
			case "gen_ai.client.operation.duration":
				durations += dp.Count
			case "gen_ai.client.token.usage":
				tokens += dp.GetSum()
			}
		}
	}
	if durations != uint64(chats) || tokens != float64(inTotal+outTotal) {
		t.Errorf("metrics: %d operation durations, %v tokens; want %d, %d", durations, tokens, chats, inTotal+outTotal)
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

// A --nats run whose coordinator and two workers export to one receiver
// makes one trace: one root (the run's), and each task's invoke_agent
// span, exported by the worker that ran it, under the run's span with the
// run's conversation id, its chats under it. Each worker's spans are sent
// when it stops on SIGTERM. The run's record names the worker of each
// task: its end event, and fsd show.
func TestTracesAcrossWorkers(t *testing.T) {
	srv := natsServer(t, true)
	rcv := newOTLPReceiver(t)
	dir := t.TempDir()
	for _, sk := range []string{"alpha", "beta"} {
		write(t, filepath.Join(dir, "skills", sk, sk+".skill.yaml"), "id: "+sk+"\nname: "+sk+"\ndescription: Answers.\nversion: 1.0.0\ninstructions: Answer.\n"+
			"agents:\n  writer: {description: Writes., prompt: Answer.}\n")
	}
	write(t, filepath.Join(dir, "two.script.yaml"), "agents:\n  writer: [{say: 'done {{.Task.ID}}'}]\n")
	wf := filepath.Join(dir, "two.workflow.yaml")
	write(t, wf, "name: two\nmodel: scripted\nscript: two.script.yaml\nskills: [./skills]\ninput: go\ntasks:\n"+
		"  - {id: first, assignee: alpha/writer, goal: one}\n  - {id: second, assignee: beta/writer, goal: two, deps: [first]}\n")
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL}
	var stops []func() int
	for _, sk := range []string{"alpha", "beta"} {
		_, stop := workerProc(t, env, "--nats", srv.ClientURL(), "--name", "w-"+sk, "--agents", sk+".*")
		stops = append(stops, stop)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	code, out, errs := fsd(t, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", filepath.Join(dir, "runs"))
	if code != exitOK || !strings.Contains(out, "done second") {
		t.Fatalf("exit %d, answer %q: %s", code, out, errs)
	}
	for _, stop := range stops {
		if code := stop(); code != exitOK {
			t.Errorf("worker stopped with exit %d", code)
		}
	}
	host, _ := os.Hostname()
	ents, _ := os.ReadDir(filepath.Join(dir, "runs"))
	if len(ents) != 1 {
		t.Fatalf("%d runs", len(ents))
	}
	code, show, errs := fsd(t, "show", ents[0].Name(), "--runs-dir", filepath.Join(dir, "runs"))
	if code != exitOK {
		t.Fatalf("fsd show: exit %d: %s", code, errs)
	}
	for _, w := range []string{"w-alpha", "w-beta"} {
		if !strings.Contains(show, "on "+w+" ("+host+", pid ") {
			t.Errorf("fsd show does not name worker %s on %s:\n%s", w, host, show)
		}
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	byID := map[string]*tracepb.Span{}
	for _, s := range rcv.spans {
		byID[string(s.SpanId)] = s
	}
	var root *tracepb.Span
	agents := map[string]*tracepb.Span{}
	for _, s := range rcv.spans {
		if len(s.ParentSpanId) == 0 {
			if root != nil {
				t.Fatalf("two root spans: %s and %s", root.Name, s.Name)
			}
			root = s
		} else if byID[string(s.ParentSpanId)] == nil {
			t.Errorf("span %s has a parent that was not exported", s.Name)
		}
		if str(s, "gen_ai.operation.name") == "invoke_agent" {
			agents[str(s, "fsd.task.id")] = s
		}
	}
	if root == nil || root.Name != "invoke_workflow two" || rcv.instance[string(root.SpanId)] != "" {
		t.Fatalf("root span: %v", root)
	}
	for _, s := range rcv.spans {
		if string(s.TraceId) != string(root.TraceId) {
			t.Errorf("span %s is in another trace", s.Name)
		}
	}
	for task, worker := range map[string]string{"first": "w-alpha", "second": "w-beta"} {
		a := agents[task]
		if a == nil {
			t.Fatalf("no invoke_agent span of task %s among %d spans", task, len(rcv.spans))
		}
		if string(a.ParentSpanId) != string(root.SpanId) {
			t.Errorf("task %s's span is under %v, want the run's", task, byID[string(a.ParentSpanId)])
		}
		if got := rcv.instance[string(a.SpanId)]; got != worker {
			t.Errorf("task %s's span exported by %q, want %q", task, got, worker)
		}
		if str(a, "gen_ai.conversation.id") != str(root, "gen_ai.conversation.id") {
			t.Errorf("task %s's conversation id %q, want the run's %q", task, str(a, "gen_ai.conversation.id"), str(root, "gen_ai.conversation.id"))
		}
		chats := 0
		for _, s := range rcv.spans {
			if string(s.ParentSpanId) == string(a.SpanId) && str(s, "gen_ai.operation.name") == "chat" {
				chats++
			}
		}
		if chats != 1 {
			t.Errorf("task %s: %d chat spans under its agent span, want 1", task, chats)
		}
	}
}
