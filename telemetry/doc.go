// Package telemetry traces runs with OpenTelemetry and records the GenAI
// client metrics: a span for the run, one for each generator (the host,
// each task's worker), each model call and each tool call, named and
// attributed per the OpenTelemetry GenAI semantic conventions v1.41.1
// (invoke_workflow, invoke_agent, chat, execute_tool; gen_ai.*
// attributes), and the gen_ai.client.token.usage and
// gen_ai.client.operation.duration histograms, exported over OTLP/HTTP.
//
// Spans are made by the OpenTelemetry SDK and sent by this package's own
// exporter (otlp.go), which writes the OTLP protobuf wire format with
// its own primitives (otlpproto.go, wire.go) and follows the OTLP/HTTP
// exporter specification (OTEL_EXPORTER_OTLP_* variables, retries on 429/502/503/
// 504, one timeout per export). The official otlptracehttp exporter would
// link gRPC and grpc-gateway into fsd for nothing (see docs/design.md).
// The two histograms are aggregated here (metrics.go) and sent by the same
// exporter to the metrics endpoint, for the same reason.
//
// It is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or the traces' or
// metrics' own endpoint) is set: Setup then returns no observer and the
// engine does no tracing work at all. Prompt and result text stay out of
// spans unless Options.Content is set, and known secrets are masked in
// whatever text is kept. It does not trace anything but runs and their
// attempts (no HTTP client spans); carrying the trace context to workers,
// programs and MCP servers is done where the work is handed on
// (natsboard, internal/proc, mcptool, mcpserve).
package telemetry
