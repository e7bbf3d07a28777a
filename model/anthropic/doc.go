// Package anthropic is the model.Model for Anthropic's Messages API. It
// speaks the wire format itself (wire.go holds the request and answer
// shapes; add new request fields there).
//
// It maps model.Request to a Messages request — the current-context block as
// `system`, transcript messages in order, assistant tool calls as tool_use
// blocks, tool results as tool_result blocks (is_error set for failures)
// inside user messages, consecutive results grouped into one user message,
// tools with their JSON Schema as input_schema — and the answer back to
// model.Response. With Request.OnText set it streams and hands each text
// delta over as it arrives; a stream is complete only at message_stop,
// otherwise it is retried, and a retry after streamed text calls
// Request.OnReset first.
//
// The call itself (credentials, retries under model/retry, streaming, the
// reset) is model/internal/wire's Client, shared with the other provider;
// this package brings the Messages format: the request body, and reading
// an answer whole or streamed. It does not read the environment or parse
// model strings: model/provider does.
package anthropic
