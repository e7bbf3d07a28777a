// Package openai is the model.Model for OpenAI's two APIs: Chat
// Completions (New), which every OpenAI-compatible server speaks (Ollama,
// vLLM, llama.cpp server, gateways), and the Responses API (NewResponses,
// model strings openai-responses/…), which keeps a reasoning model's
// reasoning between steps. Both take the same Config and share what their
// wire formats share: tool schemas, output schemas fitted to strict mode,
// the prompt-cache key, arguments a model broke. wire.go and
// responses_wire.go hold the request and answer shapes; add new request
// fields there.
//
// Chat Completions: the current-context block is the leading system
// message, transcript messages follow in order, assistant tool calls with
// their ids, one tool message per result echoing its call id, tools as
// function definitions with their JSON Schema. A stream is complete only
// with a finish reason or [DONE].
//
// Responses: the context block is `instructions`, the transcript becomes
// input items (messages, function_call, function_call_output, images as
// input_image parts), typed output is text.format. Nothing is kept on
// OpenAI's side (store: false, never previous_response_id): a reasoning
// model's encrypted reasoning items come back on the answer as its
// model.State, which the transcript and the journal keep, and the next
// request sends them back in the order the API returned them, with their
// ids, as OpenAI's own stateless clients do. A stream is complete only
// with response.completed or response.incomplete.
//
// With Request.OnText set either streams and hands each text delta over as
// it arrives; a stream cut short is retried, and a retry after streamed
// text calls Request.OnReset first. The call itself (credentials, retries
// under model/retry, streaming, the reset) is model/internal/wire's
// Client, shared with the other providers. The package does not read the
// environment or parse model strings: model/provider does.
package openai
