// Package openai is the model.Model for OpenAI's Chat Completions API and
// every server that speaks it (Ollama, vLLM, llama.cpp server, gateways),
// built on the official SDK github.com/openai/openai-go/v3.
//
// It maps model.Request to a chat completion request — the current-context
// block as the leading system message, transcript messages in order,
// assistant tool calls with their ids, one tool message per result echoing
// its call id, tools as function definitions with their JSON Schema — and
// the completion back to model.Response. With Request.OnText set it streams
// and hands each text delta over as it arrives.
//
// Failures follow model/retry (the SDK's own retries are off). It does not
// read the environment or parse model strings: model/provider does.
package openai
