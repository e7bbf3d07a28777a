package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// spanFixture covers every field the encoder writes: each attribute type
// (zero values included), events, links with a remote context, a parent,
// trace state, an error status and dropped counts.
func spanFixture(t *testing.T) []sdktrace.ReadOnlySpan {
	ts, err := trace.ParseTraceState("vendor=a,other=b")
	if err != nil {
		t.Fatal(err)
	}
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1, 1, 1, 1, 1, 1, 1, 1}, TraceFlags: trace.FlagsSampled, TraceState: ts})
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{2, 2, 2, 2, 2, 2, 2, 2}, Remote: true})
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}, TraceState: ts, Remote: true})
	start := time.Unix(1_700_000_000, 123)
	res := resource.NewSchemaless(attribute.String("service.name", "fsd"), attribute.Int("pid", 42))
	scope := instrumentation.Scope{Name: "github.com/fsdrun/fsd", Version: "v1", SchemaURL: "https://opentelemetry.io/schemas/1.40.0",
		Attributes: attribute.NewSet(attribute.Bool("scoped", true))}
	stubs := tracetest.SpanStubs{
		{
			Name: "chat gpt", SpanContext: sc, Parent: parent, SpanKind: trace.SpanKindClient,
			StartTime: start, EndTime: start.Add(time.Second),
			Attributes: []attribute.KeyValue{
				attribute.String("s", "text ✓"), attribute.String("empty", ""),
				attribute.Int64("i", -7), attribute.Int("zero", 0), attribute.Bool("b", true), attribute.Bool("f", false),
				attribute.Float64("d", 2.5), attribute.Float64("nan", math.Inf(1)),
				attribute.StringSlice("ss", []string{"a", ""}), attribute.Int64Slice("is", []int64{1, -2}),
				attribute.BoolSlice("bs", []bool{true, false}), attribute.Float64Slice("ds", []float64{0.5}),
			},
			DroppedAttributes: 3,
			Events: []sdktrace.Event{{Name: "retry", Time: start.Add(time.Millisecond),
				Attributes: []attribute.KeyValue{attribute.Int("attempt", 2)}, DroppedAttributeCount: 1}},
			DroppedEvents: 4,
			Links:         []sdktrace.Link{{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("why", "resume")}, DroppedAttributeCount: 2}},
			DroppedLinks:  5,
			Status:        sdktrace.Status{Code: codes.Error, Description: "boom"},
			Resource:      res, InstrumentationScope: scope,
		},
		{Name: "root", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{3}}),
			SpanKind: trace.SpanKindInternal, StartTime: start, EndTime: start, Resource: res, InstrumentationScope: scope},
		// Another scope under the same resource, and another resource.
		{Name: "other scope", SpanContext: sc, Resource: res, InstrumentationScope: instrumentation.Scope{Name: "x"},
			Status: sdktrace.Status{Code: codes.Ok}},
		{Name: "other resource", SpanContext: sc, Resource: resource.NewSchemaless(attribute.String("service.name", "b")), InstrumentationScope: scope},
	}
	return stubs.Snapshots()
}

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}
func i64(v int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}
}
func bl(v bool) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v}}
}
func dbl(v float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}
}
func arr(v ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: v}}}
}
func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

// The hand-written wire encoding decodes with the official generated OTLP
// types into exactly the message the spans describe. (TracesData has the
// same wire form as ExportTraceServiceRequest, without the gRPC package.)
func TestEncodingDecodesWithTheOTLPTypes(t *testing.T) {
	var got tracepb.TracesData
	if err := proto.Unmarshal(encodeRequest(nil, spanFixture(t)), &got); err != nil {
		t.Fatal(err)
	}
	tid := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	start := uint64(1_700_000_000_000_000_123)
	scope := &commonpb.InstrumentationScope{Name: "github.com/fsdrun/fsd", Version: "v1", Attributes: []*commonpb.KeyValue{kv("scoped", bl(true))}}
	want := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{
		{
			Resource: res(kv("pid", i64(42)), kv("service.name", str("fsd"))),
			ScopeSpans: []*tracepb.ScopeSpans{
				{Scope: scope, SchemaUrl: "https://opentelemetry.io/schemas/1.40.0", Spans: []*tracepb.Span{
					{
						TraceId: tid, SpanId: []byte{1, 1, 1, 1, 1, 1, 1, 1}, TraceState: "vendor=a,other=b",
						ParentSpanId: []byte{2, 2, 2, 2, 2, 2, 2, 2}, Name: "chat gpt", Kind: tracepb.Span_SPAN_KIND_CLIENT,
						StartTimeUnixNano: start, EndTimeUnixNano: start + 1e9,
						Attributes: []*commonpb.KeyValue{
							kv("s", str("text ✓")), kv("empty", str("")), kv("i", i64(-7)), kv("zero", i64(0)),
							kv("b", bl(true)), kv("f", bl(false)), kv("d", dbl(2.5)), kv("nan", dbl(math.Inf(1))),
							kv("ss", arr(str("a"), str(""))), kv("is", arr(i64(1), i64(-2))),
							kv("bs", arr(bl(true), bl(false))), kv("ds", arr(dbl(0.5))),
						},
						DroppedAttributesCount: 3,
						Events: []*tracepb.Span_Event{{TimeUnixNano: start + 1e6, Name: "retry",
							Attributes: []*commonpb.KeyValue{kv("attempt", i64(2))}, DroppedAttributesCount: 1}},
						DroppedEventsCount: 4,
						Links: []*tracepb.Span_Link{{TraceId: []byte{9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, SpanId: []byte{9, 0, 0, 0, 0, 0, 0, 0},
							TraceState: "vendor=a,other=b", Attributes: []*commonpb.KeyValue{kv("why", str("resume"))}, DroppedAttributesCount: 2,
							Flags: flagHasIsRemote | flagIsRemote}},
						DroppedLinksCount: 5,
						Status:            &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom"},
						Flags:             1 | flagHasIsRemote | flagIsRemote,
					},
					{TraceId: tid, SpanId: []byte{3, 0, 0, 0, 0, 0, 0, 0}, Name: "root", Kind: tracepb.Span_SPAN_KIND_INTERNAL,
						StartTimeUnixNano: start, EndTimeUnixNano: start, Status: &tracepb.Status{}, Flags: flagHasIsRemote},
				}},
				{Scope: &commonpb.InstrumentationScope{Name: "x"}, Spans: []*tracepb.Span{
					{TraceId: tid, SpanId: []byte{1, 1, 1, 1, 1, 1, 1, 1}, TraceState: "vendor=a,other=b", Name: "other scope",
						Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}, Flags: 1 | flagHasIsRemote},
				}},
			},
		},
		{
			Resource: res(kv("service.name", str("b"))),
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: scope, SchemaUrl: "https://opentelemetry.io/schemas/1.40.0", Spans: []*tracepb.Span{
				{TraceId: tid, SpanId: []byte{1, 1, 1, 1, 1, 1, 1, 1}, TraceState: "vendor=a,other=b", Name: "other resource",
					Status: &tracepb.Status{}, Flags: 1 | flagHasIsRemote},
			}}},
		},
	}}
	if d := cmp.Diff(want, &got, protocmp.Transform()); d != "" {
		t.Errorf("decoded request differs (-want +got):\n%s", d)
	}
}

// newReceiver is an OTLP/HTTP collector that answers each request with the
// next of replies (then 200), keeping each request.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
	data []*tracepb.TracesData
}

type reply struct {
	code    int
	header  map[string]string
	body    []byte
	waitCtx bool // hang until the client gives up
}

func newReceiver(t *testing.T, replies ...reply) *receiver {
	rcv := &receiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var td tracepb.TracesData
		if err := proto.Unmarshal(b, &td); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		n := len(rcv.reqs)
		rcv.reqs = append(rcv.reqs, r)
		rcv.data = append(rcv.data, &td)
		rcv.mu.Unlock()
		if n >= len(replies) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			return
		}
		rp := replies[n]
		if rp.waitCtx {
			<-r.Context().Done()
			return
		}
		for k, v := range rp.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(rp.code)
		_, _ = w.Write(rp.body)
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

func (r *receiver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.reqs) }

func testExporter(t *testing.T, vars map[string]string) *exporter {
	t.Helper()
	e, err := newExporter(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	e.backoff = time.Millisecond
	return e
}

// The variables of the OTLP exporter specification: endpoints (a base or
// the traces URL as is), headers (URL-decoded), timeout, compression,
// protocol; the traces-specific variable wins.
func TestExporterConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		url     string
		headers map[string]string
		timeout time.Duration
		gzip    bool
	}{
		{"base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces", map[string]string{}, 10 * time.Second, false},
		{"base with path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h.example/otlp/"}, "https://h.example/otlp/v1/traces", map[string]string{}, 10 * time.Second, false},
		{"traces endpoint as is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/custom"}, "http://b:4318/custom", map[string]string{}, 10 * time.Second, false},
		{"traces endpoint without path", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318"}, "http://b:4318/", map[string]string{}, 10 * time.Second, false},
		{"headers", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%20k,x-team = blue "},
			"http://a/v1/traces", map[string]string{"api-key": "s k", "x-team": "blue"}, 10 * time.Second, false},
		{"traces headers win", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2"},
			"http://a/v1/traces", map[string]string{"b": "2"}, 10 * time.Second, false},
		{"timeout and gzip", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			"http://a/v1/traces", map[string]string{}, 2500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testExporter(t, tc.env)
			if e.url != tc.url || !cmp.Equal(e.headers, tc.headers) || e.timeout != tc.timeout || e.gzip != tc.gzip {
				t.Errorf("url %q headers %v timeout %v gzip %v", e.url, e.headers, e.timeout, e.gzip)
			}
		})
	}
}

// Bad settings are errors that name the variable, never a header's value.
func TestExporterConfigurationErrors(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318: want an http:// or https:// URL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://x"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: fsd exports traces over OTLP/HTTP with protobuf only"},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization"}, `OTEL_EXPORTER_OTLP_HEADERS: "authorization" is not key=value`},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%zzsecret"}, `the value of "authorization" is not URL-encoded`},
		{map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, "OTEL_EXPORTER_OTLP_TIMEOUT=10s: want milliseconds"},
		{map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_COMPRESSION=zstd: want gzip or none"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE: open /nonexistent/ca.pem"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": "/k.pem"}, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together"},
	} {
		_, err := newExporter(env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.env, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%v: the error shows a header value: %v", tc.env, err)
		}
	}
}

// One export is one POST of protobuf to the traces URL with the
// configured headers; gzip when asked.
func TestExportSendsProtobufWithHeaders(t *testing.T) {
	for _, gz := range []string{"none", "gzip"} {
		t.Run(gz, func(t *testing.T) {
			rcv := newReceiver(t)
			e := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL,
				"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc", "OTEL_EXPORTER_OTLP_COMPRESSION": gz})
			if err := e.ExportSpans(context.Background(), spanFixture(t)); err != nil {
				t.Fatal(err)
			}
			if rcv.count() != 1 {
				t.Fatalf("%d requests", rcv.count())
			}
			r := rcv.reqs[0]
			if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" ||
				r.Header.Get("Authorization") != "Bearer abc" || (r.Header.Get("Content-Encoding") == "gzip") != (gz == "gzip") {
				t.Errorf("%s %s headers %v", r.Method, r.URL.Path, r.Header)
			}
			if n := len(rcv.data[0].ResourceSpans); n != 2 {
				t.Errorf("%d resource spans", n)
			}
		})
	}
}

// A busy collector (429, 502, 503, 504) gets the same request again; a
// request it refuses (400) is not retried; Retry-After is honoured.
func TestExportRetries(t *testing.T) {
	busy := func(code int) reply { return reply{code: code, header: map[string]string{"Retry-After": "0"}} }
	rcv := newReceiver(t, busy(503), busy(429), reply{code: 502}, reply{code: 504})
	e := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL})
	if err := e.ExportSpans(context.Background(), spanFixture(t)); err != nil {
		t.Fatal(err)
	}
	if rcv.count() != 5 || !proto.Equal(rcv.data[0], rcv.data[4]) {
		t.Errorf("%d requests, want 4 refused and 1 taken, all the same", rcv.count())
	}

	status := []byte{0x12, 0x07, 'b', 'a', 'd', ' ', 'k', 'e', 'y'} // google.rpc.Status{message: "bad key"}
	rcv = newReceiver(t, reply{code: 400, header: map[string]string{"Content-Type": "application/x-protobuf"}, body: status})
	e = testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "api-key=topsecret"})
	err := e.ExportSpans(context.Background(), spanFixture(t))
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request: bad key") || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("error %v, want the status and its message, no header value", err)
	}
	if rcv.count() != 1 {
		t.Errorf("a 400 was retried: %d requests", rcv.count())
	}
}

// A collector that never answers costs one timeout, not a hung run.
func TestExportTimesOut(t *testing.T) {
	rcv := newReceiver(t, reply{waitCtx: true})
	e := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": "50"})
	err := e.ExportSpans(context.Background(), spanFixture(t))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want a deadline", err)
	}
}

// A partial success names the rejected spans.
func TestExportPartialSuccess(t *testing.T) {
	// ExportTraceServiceResponse{partial_success: {rejected_spans: 2, error_message: "too old"}}
	body := []byte{0x0a, 0x0b, 0x08, 0x02, 0x12, 0x07, 't', 'o', 'o', ' ', 'o', 'l', 'd'}
	rcv := newReceiver(t, reply{code: 200, body: body})
	e := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL})
	err := e.ExportSpans(context.Background(), spanFixture(t))
	if err == nil || !strings.Contains(err.Error(), "rejected 2 spans: too old") {
		t.Errorf("error %v", err)
	}
	if rejected, msg := partialSuccess([]byte{0xff}); rejected != 0 || msg != "" {
		t.Errorf("garbage read as a rejection: %d %q", rejected, msg)
	}
}

// Through the SDK: Setup's provider batches spans and Shutdown flushes
// them to the collector.
func TestSetupExportsOnShutdown(t *testing.T) {
	rcv := newReceiver(t)
	t.Setenv("OTEL_SERVICE_NAME", "fsd-test") // the resource detector reads the process environment
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}
	obs, shutdown, err := Setup(context.Background(), env(vars), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, end := obs.Run(context.Background(), "run-1", "wf")
	end("", nil)
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rcv.count() != 1 {
		t.Fatalf("%d requests", rcv.count())
	}
	rs := rcv.data[0].ResourceSpans[0]
	var buf bytes.Buffer
	for _, a := range rs.Resource.Attributes {
		buf.WriteString(a.Key + "=" + a.Value.GetStringValue() + " ")
	}
	if !strings.Contains(buf.String(), "service.name=fsd-test") || rs.ScopeSpans[0].Spans[0].Name != "invoke_workflow wf" {
		t.Errorf("resource %s, span %s", buf.String(), rs.ScopeSpans[0].Spans[0].Name)
	}
}

func res(kvs ...*commonpb.KeyValue) *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: kvs}
}
