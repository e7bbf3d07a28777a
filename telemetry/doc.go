// Package telemetry traces runs with OpenTelemetry: a span for the run,
// one for each generator (the host, each task's worker), each model call
// and each tool call, named and attributed per the OpenTelemetry GenAI
// semantic conventions (invoke_workflow, invoke_agent, chat,
// execute_tool; gen_ai.* attributes), exported over OTLP/HTTP.
//
// It is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: Setup then returns no
// observer and the engine does no tracing work at all. Prompt and result
// text stay out of spans unless Options.Content is set, and known secrets
// are masked in whatever text is kept. It does not trace anything but a
// run (no HTTP client spans, no metrics).
package telemetry
