package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fsdrun/fsd/model"
)

// The attributes of the OpenTelemetry semantic conventions v1.41.1 that
// fsd's spans and metrics may carry, with their types, written from the
// published registry (model/gen-ai/registry.yaml, model/server/
// registry.yaml, model/error/registry.yaml at tag v1.41.1 of
// github.com/open-telemetry/semantic-conventions), not from fsd's code.
// "any" (attribute.INVALID here) is any value: fsd sends a structured
// one as its JSON text.
var registry = map[string]attribute.Type{
	"gen_ai.provider.name":                     attribute.STRING,
	"gen_ai.request.model":                     attribute.STRING,
	"gen_ai.request.max_tokens":                attribute.INT64,
	"gen_ai.request.choice.count":              attribute.INT64,
	"gen_ai.request.temperature":               attribute.FLOAT64,
	"gen_ai.request.top_p":                     attribute.FLOAT64,
	"gen_ai.request.top_k":                     attribute.FLOAT64,
	"gen_ai.request.stop_sequences":            attribute.STRINGSLICE,
	"gen_ai.request.frequency_penalty":         attribute.FLOAT64,
	"gen_ai.request.presence_penalty":          attribute.FLOAT64,
	"gen_ai.request.seed":                      attribute.INT64,
	"gen_ai.request.stream":                    attribute.BOOL,
	"gen_ai.response.id":                       attribute.STRING,
	"gen_ai.response.model":                    attribute.STRING,
	"gen_ai.response.finish_reasons":           attribute.STRINGSLICE,
	"gen_ai.response.time_to_first_chunk":      attribute.FLOAT64,
	"gen_ai.usage.input_tokens":                attribute.INT64,
	"gen_ai.usage.cache_read.input_tokens":     attribute.INT64,
	"gen_ai.usage.cache_creation.input_tokens": attribute.INT64,
	"gen_ai.usage.output_tokens":               attribute.INT64,
	"gen_ai.usage.reasoning.output_tokens":     attribute.INT64,
	"gen_ai.token.type":                        attribute.STRING, // enum: input, output
	"gen_ai.conversation.id":                   attribute.STRING,
	"gen_ai.agent.id":                          attribute.STRING,
	"gen_ai.agent.name":                        attribute.STRING,
	"gen_ai.agent.description":                 attribute.STRING,
	"gen_ai.agent.version":                     attribute.STRING,
	"gen_ai.tool.name":                         attribute.STRING,
	"gen_ai.tool.call.id":                      attribute.STRING,
	"gen_ai.tool.description":                  attribute.STRING,
	"gen_ai.tool.type":                         attribute.STRING,
	"gen_ai.tool.call.arguments":               attribute.INVALID, // any
	"gen_ai.tool.call.result":                  attribute.INVALID, // any
	"gen_ai.tool.definitions":                  attribute.INVALID, // any
	"gen_ai.operation.name":                    attribute.STRING,  // enum
	"gen_ai.output.type":                       attribute.STRING,  // enum: text, json, image, speech
	"gen_ai.system_instructions":               attribute.INVALID, // any
	"gen_ai.input.messages":                    attribute.INVALID, // any
	"gen_ai.output.messages":                   attribute.INVALID, // any
	"gen_ai.workflow.name":                     attribute.STRING,
	"server.address":                           attribute.STRING,
	"server.port":                              attribute.INT64,
	"error.type":                               attribute.STRING,
}

// required are the attributes each operation's span must carry
// (model/gen-ai/spans.yaml of v1.41.1: requirement level required, and
// conditionally required where fsd knows the condition holds).
var required = map[string][]string{
	"chat":            {"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.conversation.id"},
	"invoke_agent":    {"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.agent.name", "gen_ai.conversation.id"},
	"execute_tool":    {"gen_ai.operation.name", "gen_ai.tool.name"},
	"invoke_workflow": {"gen_ai.operation.name", "gen_ai.workflow.name"},
}

// operations are gen_ai.operation.name's values (the registry's enum).
var operations = []string{"chat", "generate_content", "text_completion", "embeddings", "retrieval", "create_agent", "invoke_agent", "execute_tool", "invoke_workflow"}

// A run observed with content: every attribute fsd puts on a span is the
// registry's, with its type, or fsd's own (fsd.*); each operation's
// required attributes are there, error.type with an error and
// server.port with server.address; the recommended response attributes
// of a chat are there; the captured messages have the structure the
// conventions' JSON schemas give.
//
// O4: fsd's GenAI attributes are the conventions' own.
func TestSemanticConventions(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	o := newObserver(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), Options{Content: true,
		Model: func(model.Caller) string { return "openai/gpt-test" }})
	ctx, endRun := o.Run(context.Background(), "run-1", "weekly")
	actx, endAgent := o.Agent(ctx, model.Caller{Agent: "report/writer", TaskID: "t1", TaskGoal: "Write."})
	req := &model.Request{Context: "You write.", Caller: model.Caller{Agent: "report/writer", TaskID: "t1"}, OnText: func(string) {},
		Output: &model.Output{Name: "brief"},
		Messages: []model.Message{{Role: model.User, Text: "Write.", Media: []model.Media{{MIME: "image/png", Data: []byte{1}}}},
			{Role: model.Assistant, Calls: []model.ToolCall{{ID: "c1", Name: "fetch", Args: json.RawMessage(`{"w":1}`)}}},
			{Role: model.Tool, CallID: "c1", Text: ""}}}
	o.Chat(actx, req)(&model.Response{Text: "Done.", ID: "chatcmpl-1", Served: "gpt-test-2026", FinishReason: "length",
		Server: "api.example.com:443", MaxTokens: 800, Usage: model.Usage{InputTokens: 10, OutputTokens: 2, CachedInputTokens: 4, CacheWriteTokens: 1}}, nil)
	o.Chat(actx, req)(nil, errors.New("boom"))
	_, endTool := o.Tool(actx, model.Caller{Agent: "report/writer", TaskID: "t1"}, model.ToolCall{ID: "c2", Name: "fetch", Args: json.RawMessage(`{}`)})
	endTool("rows", true)
	endAgent("Done.", nil)
	endRun("Done.", context.Canceled)

	spans := rec.Ended()
	ops := map[string]int{}
	for _, s := range spans {
		attrs := map[string]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value
		}
		op := attrs["gen_ai.operation.name"].AsString()
		ops[op]++
		if !slices.Contains(operations, op) {
			t.Errorf("%s: operation %q is not the registry's", s.Name(), op)
		}
		for k, v := range attrs {
			if len(k) > 4 && k[:4] == "fsd." {
				continue
			}
			want, ok := registry[k]
			switch {
			case !ok:
				t.Errorf("%s: %s is not an attribute of the conventions", s.Name(), k)
			case want == attribute.INVALID:
				// Any value; fsd's structured ones go as JSON text.
				if k == "gen_ai.tool.call.arguments" && !json.Valid([]byte(v.AsString())) {
					t.Errorf("%s: %s is not JSON: %s", s.Name(), k, v.AsString())
				}
			case v.Type() != want:
				t.Errorf("%s: %s is %v, want %v", s.Name(), k, v.Type(), want)
			}
		}
		for _, k := range required[op] {
			if _, ok := attrs[k]; !ok {
				t.Errorf("%s: no %s, which the conventions require", s.Name(), k)
			}
		}
		_, hasErr := attrs["error.type"]
		if failed := s.Status().Code.String() == "Error"; failed != hasErr {
			t.Errorf("%s: status %v, error.type %v", s.Name(), s.Status(), attrs["error.type"])
		}
		if _, ok := attrs["server.address"]; ok {
			if _, ok := attrs["server.port"]; !ok {
				t.Errorf("%s: server.address without server.port", s.Name())
			}
		}
		if v, ok := attrs["gen_ai.system_instructions"]; ok {
			checkParts(t, s.Name()+" system instructions", v.AsString())
		}
		if v, ok := attrs["gen_ai.input.messages"]; ok {
			checkMessages(t, s.Name()+" input", v.AsString(), false)
		}
		if v, ok := attrs["gen_ai.output.messages"]; ok {
			checkMessages(t, s.Name()+" output", v.AsString(), true)
		}
		if op == "chat" && !hasErr {
			for _, k := range []string{"gen_ai.response.id", "gen_ai.response.model", "gen_ai.response.finish_reasons", "server.address",
				"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens",
				"gen_ai.usage.cache_creation.input_tokens", "gen_ai.request.max_tokens", "gen_ai.request.stream", "gen_ai.output.type"} {
				if _, ok := attrs[k]; !ok {
					t.Errorf("%s: no %s", s.Name(), k)
				}
			}
			if got := attrs["gen_ai.response.finish_reasons"].AsStringSlice(); !slices.Equal(got, []string{"length"}) {
				t.Errorf("finish reasons %v, want [length]", got)
			}
		}
	}
	if want := map[string]int{"invoke_workflow": 1, "invoke_agent": 1, "chat": 2, "execute_tool": 1}; !mapsEqual(ops, want) {
		t.Errorf("operations %v, want %v", ops, want)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkMessages checks a captured message list against the conventions'
// schema (gen-ai-input-messages.json, gen-ai-output-messages.json):
// each message has a role and parts, an output message a finish reason.
func checkMessages(t *testing.T, what, text string, output bool) {
	t.Helper()
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &msgs); err != nil || len(msgs) == 0 {
		t.Errorf("%s: not a list of messages: %s", what, text)
		return
	}
	for _, m := range msgs {
		var role, reason string
		if json.Unmarshal(m["role"], &role) != nil || role == "" {
			t.Errorf("%s: a message without a role: %s", what, text)
		}
		if output && (json.Unmarshal(m["finish_reason"], &reason) != nil || reason == "") {
			t.Errorf("%s: an output message without a finish_reason: %s", what, text)
		}
		if m["parts"] == nil {
			t.Errorf("%s: a message without parts: %s", what, text)
		}
		checkParts(t, what, string(m["parts"]))
	}
}

// checkParts checks a list of parts: each part's required fields by its
// type (TextPart, ToolCallRequestPart, ToolCallResponsePart, BlobPart).
func checkParts(t *testing.T, what, text string) {
	t.Helper()
	var parts []map[string]any
	if err := json.Unmarshal([]byte(text), &parts); err != nil || parts == nil {
		t.Errorf("%s: not a list of parts: %s", what, text)
		return
	}
	need := map[string][]string{"text": {"content"}, "tool_call": {"name"}, "tool_call_response": {"response"}, "blob": {"modality", "content"}}
	for _, p := range parts {
		typ, _ := p["type"].(string)
		fields, ok := need[typ]
		if !ok {
			t.Errorf("%s: a part of type %q", what, typ)
		}
		for _, f := range fields {
			if _, ok := p[f]; !ok {
				t.Errorf("%s: a %s part without %s: %s", what, typ, f, text)
			}
		}
	}
}

// The GenAI metrics: names, units and bucket boundaries as the
// conventions give them, cumulative, their attributes the registry's with
// the required ones there; token counts by type, an error's duration
// with error.type. The body decodes with the official OTLP types.
//
// O5: the GenAI metrics are the conventions'.
func TestMetricsDecodeWithTheOTLPTypes(t *testing.T) {
	m := &meter{res: resource.NewSchemaless(attribute.String("service.name", "fsd")), start: time.Unix(100, 0),
		now: func() time.Time { return time.Unix(160, 0) }, points: map[*instrument][]*point{}}
	o := &observer{tr: sdktrace.NewTracerProvider().Tracer("t"), meter: m, opts: Options{Model: func(model.Caller) string { return "anthropic/claude-x" }}}
	req := &model.Request{Caller: model.Caller{Agent: "a"}}
	o.Chat(context.Background(), req)(&model.Response{Server: "api.anthropic.com:443", Served: "claude-x-1", Usage: model.Usage{InputTokens: 300, OutputTokens: 5}}, nil)
	o.Chat(context.Background(), req)(&model.Response{Server: "api.anthropic.com:443", Served: "claude-x-1", Usage: model.Usage{InputTokens: 20, OutputTokens: 5}}, nil)
	o.Chat(context.Background(), req)(nil, context.DeadlineExceeded)
	var md metricspb.MetricsData // ExportMetricsServiceRequest's wire form
	if err := proto.Unmarshal(m.encode(nil), &md); err != nil {
		t.Fatal(err)
	}
	sm := md.ResourceMetrics[0].ScopeMetrics[0]
	if sm.Scope.Name != scope || sm.SchemaUrl != schemaURL || len(sm.Metrics) != 2 {
		t.Fatalf("scope %v schema %q, %d metrics", sm.Scope, sm.SchemaUrl, len(sm.Metrics))
	}
	want := map[string]struct {
		unit   string
		bounds []float64
	}{
		"gen_ai.client.token.usage":        {"{token}", []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}},
		"gen_ai.client.operation.duration": {"s", []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}},
	}
	for _, mt := range sm.Metrics {
		w, ok := want[mt.Name]
		h := mt.GetHistogram()
		if !ok || mt.Unit != w.unit || h == nil || h.AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
			t.Errorf("metric %s unit %q %v", mt.Name, mt.Unit, mt.Data)
			continue
		}
		for _, dp := range h.DataPoints {
			attrs := map[string]*commonpb.AnyValue{}
			for _, kv := range dp.Attributes {
				attrs[kv.Key] = kv.Value
				if _, ok := registry[kv.Key]; !ok {
					t.Errorf("%s: %s is not an attribute of the conventions", mt.Name, kv.Key)
				}
			}
			if !slices.Equal(dp.ExplicitBounds, w.bounds) || len(dp.BucketCounts) != len(w.bounds)+1 || dp.StartTimeUnixNano != 100e9 || dp.TimeUnixNano != 160e9 {
				t.Errorf("%s: bounds %v, %d buckets, times %d-%d", mt.Name, dp.ExplicitBounds, len(dp.BucketCounts), dp.StartTimeUnixNano, dp.TimeUnixNano)
			}
			for _, k := range []string{"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model"} {
				if attrs[k] == nil {
					t.Errorf("%s: no %s", mt.Name, k)
				}
			}
			if mt.Name == "gen_ai.client.token.usage" {
				typ := attrs["gen_ai.token.type"].GetStringValue()
				// 300 and 20 input tokens: buckets (256, 1024] and (16, 64];
				// 5 and 5 output tokens: (4, 16] twice.
				buckets := make([]uint64, 15)
				if typ == "input" {
					buckets[5], buckets[3] = 1, 1
				} else {
					buckets[2] = 2
				}
				wantSum := map[string]float64{"input": 320, "output": 10}[typ]
				if dp.Count != 2 || dp.GetSum() != wantSum || !slices.Equal(dp.BucketCounts, buckets) || dp.GetMin() > dp.GetMax() {
					t.Errorf("token usage %q: count %d sum %v buckets %v", typ, dp.Count, dp.GetSum(), dp.BucketCounts)
				}
				if attrs["server.address"].GetStringValue() != "api.anthropic.com" || attrs["server.port"].GetIntValue() != 443 || attrs["gen_ai.response.model"].GetStringValue() != "claude-x-1" {
					t.Errorf("token usage attributes %v", attrs)
				}
			}
			if mt.Name == "gen_ai.client.operation.duration" {
				if e := attrs["error.type"]; (e != nil) != (dp.Count == 1) || e != nil && e.GetStringValue() != "timeout" {
					t.Errorf("duration: %d calls, error.type %v", dp.Count, e)
				}
			}
		}
	}
}
