// Package anthropic is the model.Model for Anthropic's Messages API, built on
// the official SDK github.com/anthropics/anthropic-sdk-go.
//
// It maps model.Request to a Messages request — the current-context block as
// `system`, transcript messages in order, assistant tool calls as tool_use
// blocks, tool results as tool_result blocks (is_error set for failures)
// inside user messages, consecutive results grouped into one user message,
// tools with their JSON Schema as input_schema — and the answer back to
// model.Response. With Request.OnText set it streams and hands each text
// delta over as it arrives.
//
// Failures follow model/retry (the SDK's own retries are off). It does not
// read the environment or parse model strings: model/provider does.
package anthropic
