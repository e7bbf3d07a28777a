package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

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
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup starts an OTLP/HTTP exporter configured by the standard OTel
// environment variables (endpoint, headers, timeout, compression,
// certificates, service name and resource attributes) and returns an observer for engine.Options and a
// shutdown function that flushes the spans. When Enabled is false it
// returns a nil observer and a no-op shutdown: tracing costs nothing.
func Setup(ctx context.Context, getenv func(string) string, opts Options) (engine.Observer, func(context.Context) error, error) {
	if !Enabled(getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := newExporter(getenv)
	if err != nil {
		return nil, nil, err
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
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return New(tp, opts), tp.Shutdown, nil
}

// New returns an observer that makes its spans with tp.
func New(tp trace.TracerProvider, opts Options) engine.Observer {
	return &observer{tr: tp.Tracer("github.com/fsdrun/fsd"), opts: opts, secrets: redact.New(opts.Secrets...)}
}

type observer struct {
	tr      trace.Tracer
	opts    Options
	secrets redact.Secrets
}

// Attribute keys of the GenAI semantic conventions, and fsd's own.
const (
	opName       = "gen_ai.operation.name"
	providerName = "gen_ai.provider.name"
	requestModel = "gen_ai.request.model"
	agentName    = "gen_ai.agent.name"
	convID       = "gen_ai.conversation.id"
	inTokens     = "gen_ai.usage.input_tokens"
	outTokens    = "gen_ai.usage.output_tokens"
	toolName     = "gen_ai.tool.name"
	toolCallID   = "gen_ai.tool.call.id"
	toolType     = "gen_ai.tool.type"
	toolArgs     = "gen_ai.tool.call.arguments"
	toolResult   = "gen_ai.tool.call.result"
	sysInstr     = "gen_ai.system_instructions"
	inMessages   = "gen_ai.input.messages"
	outMessages  = "gen_ai.output.messages"
	errorType    = "error.type"
	fsdRun       = "fsd.run.id"
	fsdTask      = "fsd.task.id"
	fsdStep      = "fsd.step"
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
		trace.WithAttributes(attribute.String(opName, "invoke_workflow"), attribute.String(agentName, workflow),
			attribute.String(convID, runID), attribute.String(fsdRun, runID)))
	return ctx, func(answer string, err error) {
		if o.opts.Content && answer != "" {
			span.SetAttributes(attribute.String(outMessages, o.outputJSON(answer, nil)))
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
			span.SetAttributes(attribute.String(outMessages, o.outputJSON(answer, nil)))
		}
		o.end(span, err)
	}
}

// S4: no text in a span without Content (--otel-content).
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
	if o.opts.Content {
		attrs = append(attrs, attribute.String(sysInstr, o.mask(req.Context)), attribute.String(inMessages, o.inputJSON(req.Messages)))
	}
	_, span := o.tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return func(resp *model.Response, err error) {
		if resp != nil {
			span.SetAttributes(attribute.Int(inTokens, resp.Usage.InputTokens), attribute.Int(outTokens, resp.Usage.OutputTokens))
			if o.opts.Content && err == nil {
				span.SetAttributes(attribute.String(outMessages, o.outputJSON(resp.Text, resp.Calls)))
			}
		}
		o.end(span, err)
	}
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

// part and message are the GenAI conventions' message shapes.
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

type message struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

func (o *observer) inputJSON(msgs []model.Message) string {
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		mm := message{Role: string(m.Role)}
		switch m.Role {
		case model.Tool:
			mm.Parts = append(mm.Parts, part{Type: "tool_call_response", ID: m.CallID, Response: m.Text})
		default:
			if m.Text != "" {
				mm.Parts = append(mm.Parts, part{Type: "text", Content: m.Text})
			}
			for _, c := range m.Calls {
				mm.Parts = append(mm.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Args})
			}
		}
		out = append(out, mm)
	}
	b, _ := json.Marshal(out)
	return o.mask(string(b))
}

func (o *observer) outputJSON(text string, calls []model.ToolCall) string {
	m := message{Role: "assistant"}
	if text != "" {
		m.Parts = append(m.Parts, part{Type: "text", Content: text})
	}
	for _, c := range calls {
		m.Parts = append(m.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Args})
	}
	b, _ := json.Marshal([]message{m})
	return o.mask(string(b))
}
