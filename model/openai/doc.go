// Package openai is the model.Model for OpenAI's Chat Completions API and
// every server that speaks it (Ollama, vLLM, llama.cpp server, gateways). It
// speaks the wire format itself (wire.go holds the request and answer
// shapes; add new request fields there).
//
// It maps model.Request to a chat completion request — the current-context
// block as the leading system message, transcript messages in order,
// assistant tool calls with their ids, one tool message per result echoing
// its call id, tools as function definitions with their JSON Schema — and
// the completion back to model.Response. With Request.OnText set it streams
// and hands each text delta over as it arrives; a stream is complete only
// with a finish reason or [DONE], otherwise it is retried, and a retry after
// streamed text calls Request.OnReset first.
//
// The call itself (credentials, retries under model/retry, streaming, the
// reset) is model/internal/wire's Client, shared with the other provider;
// this package brings the Chat Completions format: the request body, and
// reading an answer whole or streamed. It does not read the environment or
// parse model strings: model/provider does.
package openai
