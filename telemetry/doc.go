// Package telemetry traces runs with OpenTelemetry: a span for the run,
// one for each generator (the host, each task's worker), each model call
// and each tool call, named and attributed per the OpenTelemetry GenAI
// semantic conventions (invoke_workflow, invoke_agent, chat,
// execute_tool; gen_ai.* attributes), exported over OTLP/HTTP.
//
// Spans are made by the OpenTelemetry SDK and sent by this package's own
// exporter (otlp.go), which writes the OTLP protobuf wire format with
// protowire (otlpproto.go) and follows the OTLP/HTTP exporter
// specification (OTEL_EXPORTER_OTLP_* variables, retries on 429/502/503/
// 504, one timeout per export). The official otlptracehttp exporter would
// link gRPC and grpc-gateway into fsd for nothing (see docs/design.md).
//
// It is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: Setup then returns no
// observer and the engine does no tracing work at all. Prompt and result
// text stay out of spans unless Options.Content is set, and known secrets
// are masked in whatever text is kept. It does not trace anything but a
// run (no HTTP client spans, no metrics).
package telemetry
