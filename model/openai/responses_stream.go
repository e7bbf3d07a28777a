package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// streamResponse reads one streamed response. It is complete with its
// terminal event, response.completed or response.incomplete; a stream
// that ends without one was cut short and is retried. The terminal
// event's response is the answer, read as a whole one is (its output
// holds every item whole); where a server sends it without output, the
// items the stream marked done stand in. Text deltas go to onText as they
// come; text and argument deltas count toward the answer cap as they
// come, so an answer over it stops the stream.
//
// M13: complete only with its terminal event.
func streamResponse(events *wire.SSE, onText func(string), own string) (*model.Response, error) {
	done := map[int]json.RawMessage{}
	size := 0
	held := 0 // bytes of the items marked done, which repeat the deltas' text
	lastText, sent := -1, false
	for {
		ev, err := events.Next()
		if errors.Is(err, io.EOF) {
			return nil, wire.Truncated(ResponsesName, "response.completed")
		}
		if err != nil {
			return nil, err
		}
		if len(ev.Data) == 0 || string(ev.Data) == "[DONE]" {
			continue
		}
		var e streamEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return nil, retry.Permanent(fmt.Errorf("%s: a stream event is not valid JSON: %w", ResponsesName, err))
		}
		typ := e.Type
		if typ == "" {
			typ = ev.Name
		}
		switch typ {
		case "response.output_text.delta", "response.refusal.delta":
			if e.Delta == "" {
				continue
			}
			d := e.Delta
			if sent && e.OutputIndex != lastText {
				d = itemBreak + d // as answer joins the text of two items
			}
			lastText, sent = e.OutputIndex, true
			if size += len(d); size > model.MaxResponseBytes {
				return nil, wire.TooLarge(ResponsesName)
			}
			onText(d)
		case "response.function_call_arguments.delta":
			if size += len(e.Delta); size > model.MaxResponseBytes {
				return nil, wire.TooLarge(ResponsesName)
			}
		case "response.output_item.done":
			// Held until the response is whole: bounded as the deltas
			// are, with room for their text, which they repeat.
			if held += len(e.Item); held > 2*model.MaxResponseBytes {
				return nil, wire.TooLarge(ResponsesName)
			}
			if len(done) >= wire.MaxParts {
				return nil, wire.TooManyParts(ResponsesName)
			}
			done[e.OutputIndex] = e.Item
		case "response.completed", "response.incomplete", "response.failed":
			r := e.Response
			if r == nil {
				return nil, retry.Permanent(fmt.Errorf("%s: the %s event carries no response", ResponsesName, typ))
			}
			if r.Status == "" {
				r.Status = strings.TrimPrefix(typ, "response.")
			}
			if len(r.Output) == 0 {
				r.Output = inOrder(done)
			}
			return answer(r, own)
		case "error":
			return nil, streamErrorEvent(e)
		}
	}
}

// inOrder lists the items marked done by their output index.
func inOrder(done map[int]json.RawMessage) []json.RawMessage {
	idx := make([]int, 0, len(done))
	for i := range done {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]json.RawMessage, len(idx))
	for n, i := range idx {
		out[n] = done[i]
	}
	return out
}

// streamErrorEvent is an error event's failure: its code and message at
// the top, as the API documents them, or in an error object, as some
// servers send them.
func streamErrorEvent(e streamEvent) error {
	code, _ := e.Code.(string)
	msg := e.Message
	if len(e.Error) > 0 && string(e.Error) != "null" {
		var inner struct {
			Code    any    `json:"code"`
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &inner) == nil {
			if msg == "" {
				msg = inner.Message
			}
			if code == "" {
				code, _ = inner.Code.(string)
			}
			if code == "" {
				code = inner.Type
			}
		}
	}
	return responseError("error inside the stream", code, msg)
}
