package telemetry

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
)

// Options configure the spans.
type Options struct {
	// Content puts prompts, responses, tool arguments and results in
	// spans (gen_ai.input.messages, gen_ai.tool.call.result, …). Off by
	// default: traces often leave the machine.
	Content bool
	// Secrets are masked wherever text is kept (with Content).
	Secrets []string
	// Model names the model string ("openai/gpt-5.4-mini") a caller's
	// requests go to; nil leaves gen_ai.request.model out.
	Model func(model.Caller) string
	// Instance names this process among those exporting as service fsd
	// (service.instance.id): a worker's --name. "": none.
	Instance string
}

// Enabled reports whether the standard OTel environment asks for traces:
// an OTLP endpoint is set and the SDK is not disabled.
func Enabled(getenv func(string) string) bool { return enabled(getenv, traces) }

// metricsEnabled is Enabled for metrics.
func metricsEnabled(getenv func(string) string) bool { return enabled(getenv, metrics) }

// enabled reports whether the environment asks for sig: an OTLP endpoint
// for it is set and neither the SDK nor the signal's exporter
// (OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER) is turned off.
func enabled(getenv func(string) string, sig signal) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if v := strings.TrimSpace(getenv("OTEL_" + sig.env + "_EXPORTER")); v == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+sig.env+"_ENDPOINT") != ""
}

// The instrumentation scope of fsd's spans and metrics, and the version
// of the OpenTelemetry semantic conventions they follow.
const (
	scope     = "github.com/fsdrun/fsd"
	schemaURL = "https://opentelemetry.io/schemas/1.41.1"
)

// Setup starts OTLP/HTTP exporters configured by the standard OTel
// environment variables (endpoint, headers, timeout, compression,
// certificates, service name and resource attributes): one for traces
// when Enabled, one for the GenAI metrics when an endpoint for metrics
// is set. It returns an observer for engine.Options and a shutdown
// function that flushes both. When neither is asked for it returns a nil
// observer and a no-op shutdown: telemetry costs nothing.
func Setup(ctx context.Context, getenv func(string) string, opts Options) (engine.Observer, func(context.Context) error, error) {
	tracesOn, metricsOn := Enabled(getenv), metricsEnabled(getenv)
	if !tracesOn && !metricsOn {
		return nil, func(context.Context) error { return nil }, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "fsd")),
		resource.WithAttributes(instance(opts.Instance)...),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, nil, err
	}
	var tp trace.TracerProvider = noop.NewTracerProvider()
	var shutdowns []func(context.Context) error
	if tracesOn {
		exp, err := newExporter(getenv)
		if err != nil {
			return nil, nil, err
		}
		sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		tp, shutdowns = sdk, append(shutdowns, sdk.Shutdown)
	}
	o := newObserver(tp, opts)
	if metricsOn {
		exp, err := newSignalExporter(getenv, metrics)
		if err != nil {
			return nil, nil, err
		}
		every, err := exportInterval(getenv)
		if err != nil {
			return nil, nil, err
		}
		o.meter = newMeter(res, exp, every)
		shutdowns = append(shutdowns, o.meter.shutdown)
	}
	return o, func(ctx context.Context) error {
		var errs []error
		for _, f := range shutdowns {
			errs = append(errs, f(ctx))
		}
		return errors.Join(errs...)
	}, nil
}

// New returns an observer that makes its spans with tp (and records no
// metrics).
func New(tp trace.TracerProvider, opts Options) engine.Observer { return newObserver(tp, opts) }

func newObserver(tp trace.TracerProvider, opts Options) *observer {
	return &observer{tr: tp.Tracer(scope, trace.WithSchemaURL(schemaURL)), opts: opts, secrets: redact.New(opts.Secrets...)}
}

type observer struct {
	tr      trace.Tracer
	opts    Options
	secrets redact.Secrets
	// meter records the GenAI metrics; nil records none.
	meter *meter
}

// Attribute keys of the GenAI semantic conventions (v1.41.1; their
// registry: model/gen-ai/registry.yaml), and fsd's own (fsd.*).
// TestSemanticConventions checks every attribute fsd emits against a
// table written from that registry.
const (
	opName        = "gen_ai.operation.name"
	providerName  = "gen_ai.provider.name"
	requestModel  = "gen_ai.request.model"
	maxTokens     = "gen_ai.request.max_tokens"
	streaming     = "gen_ai.request.stream"
	outputType    = "gen_ai.output.type"
	responseModel = "gen_ai.response.model"
	responseID    = "gen_ai.response.id"
	finishReasons = "gen_ai.response.finish_reasons"
	agentName     = "gen_ai.agent.name"
	workflowName  = "gen_ai.workflow.name"
	convID        = "gen_ai.conversation.id"
	inTokens      = "gen_ai.usage.input_tokens"
	outTokens     = "gen_ai.usage.output_tokens"
	cacheRead     = "gen_ai.usage.cache_read.input_tokens"
	cacheCreation = "gen_ai.usage.cache_creation.input_tokens"
	tokenType     = "gen_ai.token.type"
	toolName      = "gen_ai.tool.name"
	toolCallID    = "gen_ai.tool.call.id"
	toolType      = "gen_ai.tool.type"
	toolArgs      = "gen_ai.tool.call.arguments"
	toolResult    = "gen_ai.tool.call.result"
	sysInstr      = "gen_ai.system_instructions"
	inMessages    = "gen_ai.input.messages"
	outMessages   = "gen_ai.output.messages"
	serverAddress = "server.address"
	serverPort    = "server.port"
	errorType     = "error.type"
	fsdRun        = "fsd.run.id"
	fsdTask       = "fsd.task.id"
	fsdStep       = "fsd.step"
)

// runKey carries the run id to spans started under the run.
type runKey struct{}

// InRun is ctx of an attempt of run runID that a worker process runs:
// its spans carry the run's conversation id, as those of the run's own
// process do.
func InRun(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, runKey{}, runID)
}

func instance(name string) []attribute.KeyValue {
	if name == "" {
		return nil
	}
	return []attribute.KeyValue{attribute.String("service.instance.id", name)}
}

func (o *observer) Run(ctx context.Context, runID, workflow string) (context.Context, func(string, error)) {
	ctx = context.WithValue(ctx, runKey{}, runID)
	ctx, span := o.tr.Start(ctx, "invoke_workflow "+workflow, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(opName, "invoke_workflow"), attribute.String(workflowName, workflow),
			attribute.String(convID, runID), attribute.String(fsdRun, runID)))
	return ctx, func(answer string, err error) {
		if o.opts.Content && answer != "" {
			span.SetAttributes(attribute.String(outMessages, o.outputJSON(answer, nil, "stop")))
		}
		o.end(span, err)
	}
}

func (o *observer) Agent(ctx context.Context, c model.Caller) (context.Context, func(string, error)) {
	name := c.Agent
	if name == "" {
		name = "host"
	}
	attrs := append(o.common(ctx, c), attribute.String(opName, "invoke_agent"), attribute.String(agentName, name))
	if m := o.model(c); m != "" {
		attrs = append(attrs, attribute.String(requestModel, modelName(m)), attribute.String(providerName, provider(m)))
	}
	if o.opts.Content && c.TaskGoal != "" {
		attrs = append(attrs, attribute.String(inMessages, o.inputJSON([]model.Message{{Role: model.User, Text: c.TaskGoal}})))
	}
	ctx, span := o.tr.Start(ctx, "invoke_agent "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(answer string, err error) {
		if o.opts.Content && answer != "" {
			span.SetAttributes(attribute.String(outMessages, o.outputJSON(answer, nil, "stop")))
		}
		o.end(span, err)
	}
}

// S4: no text in a span without Content (--otel-content).
//
// O3: a chat span carries what the GenAI conventions recommend that the
// call knows: the response's id, model and finish reasons, the server,
// the token counts with the cache's, max_tokens; its metrics are
// recorded with the same attributes.
func (o *observer) Chat(ctx context.Context, req *model.Request) func(*model.Response, error) {
	c := req.Caller
	m := o.model(c)
	attrs := append(o.common(ctx, c), attribute.String(opName, "chat"), attribute.Int(fsdStep, c.Step+1))
	name := "chat"
	if m != "" {
		name += " " + modelName(m)
		attrs = append(attrs, attribute.String(requestModel, modelName(m)), attribute.String(providerName, provider(m)))
	}
	if c.Agent != "" {
		attrs = append(attrs, attribute.String(agentName, c.Agent))
	}
	if req.OnText != nil {
		attrs = append(attrs, attribute.Bool(streaming, true))
	}
	if req.Output != nil {
		attrs = append(attrs, attribute.String(outputType, "json"))
	}
	if o.opts.Content {
		attrs = append(attrs, attribute.String(sysInstr, o.partsJSON(req.Context)), attribute.String(inMessages, o.inputJSON(req.Messages)))
	}
	start := time.Now()
	_, span := o.tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return func(resp *model.Response, err error) {
		// What the span and the metrics share: the operation, provider,
		// models and server.
		var shared []attribute.KeyValue
		if m != "" {
			shared = append(shared, attribute.String(requestModel, modelName(m)), attribute.String(providerName, provider(m)))
		}
		if resp != nil {
			if served := cmp.Or(resp.Served, modelName(resp.Model)); served != "" {
				shared = append(shared, attribute.String(responseModel, served))
			}
			if host, port, ok := hostPort(resp.Server); ok {
				shared = append(shared, attribute.String(serverAddress, host), attribute.Int(serverPort, port))
			}
		}
		span.SetAttributes(shared...)
		if resp != nil && err == nil {
			reason := finishReason(resp)
			span.SetAttributes(attribute.Int(inTokens, resp.Usage.InputTokens), attribute.Int(outTokens, resp.Usage.OutputTokens),
				attribute.Int(cacheRead, resp.Usage.CachedInputTokens), attribute.Int(cacheCreation, resp.Usage.CacheWriteTokens),
				attribute.StringSlice(finishReasons, []string{reason}))
			if resp.ID != "" {
				span.SetAttributes(attribute.String(responseID, resp.ID))
			}
			if resp.MaxTokens > 0 {
				span.SetAttributes(attribute.Int(maxTokens, resp.MaxTokens))
			}
			if o.opts.Content {
				span.SetAttributes(attribute.String(outMessages, o.outputJSON(resp.Text, resp.Calls, reason)))
			}
		}
		o.end(span, err)
		if o.meter == nil {
			return
		}
		shared = append(shared, attribute.String(opName, "chat"))
		dur := shared
		if err != nil {
			dur = append(slices.Clip(dur), attribute.String(errorType, errType(err)))
		}
		o.meter.record(opDuration, time.Since(start).Seconds(), dur...)
		if resp != nil && err == nil {
			o.meter.record(tokenUsage, float64(resp.Usage.InputTokens), append(slices.Clip(shared), attribute.String(tokenType, "input"))...)
			o.meter.record(tokenUsage, float64(resp.Usage.OutputTokens), append(slices.Clip(shared), attribute.String(tokenType, "output"))...)
		}
	}
}

// finishReason is why the model stopped, in the conventions' words (stop,
// length, content_filter, tool_call, error) where the provider's has
// one, else as the provider said it; when it said nothing, tool_call for
// an answer with calls and stop for one without.
func finishReason(resp *model.Response) string {
	switch r := resp.FinishReason; r {
	case "":
		if len(resp.Calls) > 0 {
			return "tool_call"
		}
		return "stop"
	case "stop", "end_turn", "stop_sequence", "STOP":
		if len(resp.Calls) > 0 {
			return "tool_call" // Gemini stops with STOP after its calls
		}
		return "stop"
	case "length", "max_tokens", "max_output_tokens", "model_context_window_exceeded", "MAX_TOKENS":
		return "length"
	case "tool_calls", "tool_use", "function_call":
		return "tool_call"
	case "content_filter", "refusal", "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII":
		return "content_filter"
	default:
		return r
	}
}

// hostPort splits a response's host:port.
func hostPort(server string) (string, int, bool) {
	host, p, err := net.SplitHostPort(server)
	if err != nil || host == "" {
		return "", 0, false
	}
	port, err := strconv.Atoi(p)
	return host, port, err == nil
}

func (o *observer) Tool(ctx context.Context, c model.Caller, call model.ToolCall) (context.Context, func(string, bool)) {
	attrs := append(o.common(ctx, c), attribute.String(opName, "execute_tool"), attribute.String(toolName, call.Name),
		attribute.String(toolCallID, call.ID), attribute.String(toolType, "function"))
	if c.Agent != "" {
		attrs = append(attrs, attribute.String(agentName, c.Agent))
	}
	if o.opts.Content {
		attrs = append(attrs, attribute.String(toolArgs, o.mask(string(call.Args))))
	}
	ctx, span := o.tr.Start(ctx, "execute_tool "+call.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(result string, isError bool) {
		if o.opts.Content {
			span.SetAttributes(attribute.String(toolResult, o.mask(result)))
		}
		if isError {
			// The model reads the error and goes on: the span says the
			// tool failed, not that the run did.
			span.SetStatus(codes.Error, "tool error")
			span.SetAttributes(attribute.String(errorType, "tool_error"))
		}
		span.End()
	}
}

// common are the attributes every span under a run carries.
func (o *observer) common(ctx context.Context, c model.Caller) []attribute.KeyValue {
	var a []attribute.KeyValue
	if id, ok := ctx.Value(runKey{}).(string); ok {
		a = append(a, attribute.String(convID, id), attribute.String(fsdRun, id))
	}
	if c.TaskID != "" {
		a = append(a, attribute.String(fsdTask, c.TaskID))
	}
	return a
}

func (o *observer) end(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, o.mask(err.Error()))
		span.SetAttributes(attribute.String(errorType, errType(err)))
	}
	span.End()
}

func errType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, engine.ErrMaxSteps):
		return "max_steps"
	}
	return "_OTHER"
}

func (o *observer) model(c model.Caller) string {
	if o.opts.Model == nil {
		return ""
	}
	return o.opts.Model(c)
}

// provider and modelName split "openai/gpt-5.4-mini"; the scripted model
// is fsd's own.
func provider(m string) string {
	if p, _, ok := strings.Cut(m, "/"); ok {
		return p
	}
	return "fsd." + m
}

func modelName(m string) string {
	if _, n, ok := strings.Cut(m, "/"); ok {
		return n
	}
	return m
}

// S3: span content is masked.
func (o *observer) mask(s string) string { return o.secrets.String(s) }

// part and message are the GenAI conventions' message shapes
// (docs/gen-ai/gen-ai-input-messages.json, gen-ai-output-messages.json
// and gen-ai-system-instructions.json of v1.41.1).
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Response is a tool_call_response's, required even when empty.
	Response *string `json:"response,omitempty"`
	// MIMEType and Modality are a blob's (its Content is base64).
	MIMEType string `json:"mime_type,omitempty"`
	Modality string `json:"modality,omitempty"`
}

type message struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
	// FinishReason is an output message's, required there.
	FinishReason string `json:"finish_reason,omitempty"`
}

// partsJSON is the system instructions: a list of parts.
//
// O4: content has the structure of the conventions' schemas.
func (o *observer) partsJSON(text string) string {
	parts := []part{}
	if text != "" {
		parts = append(parts, part{Type: "text", Content: text})
	}
	b, _ := json.Marshal(parts)
	return o.mask(string(b))
}

func (o *observer) inputJSON(msgs []model.Message) string {
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		mm := message{Role: string(m.Role), Parts: []part{}}
		switch m.Role {
		case model.Tool:
			mm.Parts = append(mm.Parts, part{Type: "tool_call_response", ID: m.CallID, Response: &m.Text})
		default:
			if m.Text != "" {
				mm.Parts = append(mm.Parts, part{Type: "text", Content: m.Text})
			}
			for _, c := range m.Calls {
				mm.Parts = append(mm.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Args})
			}
		}
		for _, md := range m.Media {
			mm.Parts = append(mm.Parts, part{Type: "blob", MIMEType: md.MIME, Modality: modality(md.MIME),
				Content: base64.StdEncoding.EncodeToString(md.Data)})
		}
		out = append(out, mm)
	}
	b, _ := json.Marshal(out)
	return o.mask(string(b))
}

// modality is a blob's modality by its MIME type.
func modality(mime string) string {
	kind, _, _ := strings.Cut(mime, "/")
	switch kind {
	case "image", "audio", "video":
		return kind
	}
	return mime
}

func (o *observer) outputJSON(text string, calls []model.ToolCall, reason string) string {
	m := message{Role: "assistant", Parts: []part{}, FinishReason: reason}
	if text != "" {
		m.Parts = append(m.Parts, part{Type: "text", Content: text})
	}
	for _, c := range calls {
		m.Parts = append(m.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Args})
	}
	b, _ := json.Marshal([]message{m})
	return o.mask(string(b))
}
