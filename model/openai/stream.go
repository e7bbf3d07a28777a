package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// partialCall is a tool call being assembled from stream chunks: the id and
// name arrive first, the arguments in pieces, all keyed by the call's index.
type partialCall struct {
	id, name string
	args     []byte
}

// stream reads one streamed completion. It is complete when the server
// sent a finish reason or [DONE]; a stream that ends cleanly without
// either was cut short and is retried.
func stream(events *wire.SSE, onText func(string)) (*model.Response, error) {
	resp := &model.Response{}
	var text []byte
	calls := map[int]*partialCall{}
	size := 0
	sawChoice, finished, done := false, false, false
	id := ""
	for !done {
		ev, err := events.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if string(ev.Data) == "[DONE]" {
			done = true
			break
		}
		if len(ev.Data) == 0 {
			continue
		}
		var chunk chatChunk
		if err := json.Unmarshal(ev.Data, &chunk); err != nil {
			return nil, retry.Permanent(fmt.Errorf("openai: a stream event is not valid JSON: %w", err))
		}
		if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
			return nil, streamError(chunk.Error)
		}
		if chunk.ID != "" {
			id = chunk.ID
		}
		if chunk.Model != "" {
			resp.Served = chunk.Model
		}
		if chunk.Usage != nil {
			resp.Usage = usage(chunk.Usage)
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			sawChoice = true
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				finished, resp.FinishReason = true, *ch.FinishReason
			}
			d := ch.Delta.Content
			if d == "" {
				d = ch.Delta.Refusal
			}
			size += len(d)
			for _, tc := range ch.Delta.ToolCalls {
				pc := calls[tc.Index]
				if pc == nil {
					if len(calls) >= wire.MaxParts {
						return nil, wire.TooManyParts(Name)
					}
					pc = &partialCall{}
					calls[tc.Index] = pc
				}
				if tc.ID != "" {
					pc.id = tc.ID
				}
				// The name comes whole in one chunk; some compatible
				// servers repeat it in later chunks, so it is set once.
				if pc.name == "" {
					pc.name = tc.Function.Name
				}
				pc.args = append(pc.args, tc.Function.Arguments...)
				size += len(tc.Function.Arguments)
			}
			if size > model.MaxResponseBytes {
				return nil, tooLarge()
			}
			if d != "" {
				text = append(text, d...)
				onText(d)
			}
		}
	}
	if !done && !finished {
		return nil, wire.Truncated(Name, "a finish reason or [DONE]")
	}
	if !sawChoice {
		return nil, errNoChoices(id)
	}
	resp.Text, resp.ID = string(text), id
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		pc := calls[i]
		resp.Calls = append(resp.Calls, model.ToolCall{ID: pc.id, Name: pc.name, Args: Args(string(pc.args))})
	}
	return resp, nil
}

// streamError is an error a server reported inside a stream after its 200.
// It carries no status of its own; it is treated as a server error, which
// is retried.
func streamError(raw json.RawMessage) error {
	var e struct {
		Message string `json:"message"`
		Code    any    `json:"code"`
	}
	msg := string(raw)
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		msg = e.Message
	}
	return &retry.StatusError{Provider: Name, Status: 500, Message: wire.Clip("error inside the stream: " + msg)}
}

func tooLarge() error { return wire.TooLarge(Name) }
