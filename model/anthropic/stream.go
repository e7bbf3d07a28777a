package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// stream reads one streamed answer, assembling the message from its
// events. It is complete at message_stop; a stream that ends cleanly
// before it was cut short and is retried.
func stream(events *wire.SSE, onText func(string)) (*model.Response, error) {
	var msg message
	var inputs [][]byte // partial JSON of each block, by index
	// texts is each block's text, by index, appended in place: adding to
	// the block's string copied all the text so far on every delta,
	// quadratic in the answer (1 MB in 10,000 deltas allocated 5 GB).
	var texts [][]byte
	size := 0
	started := false // message_start came
	for stopped := false; !stopped; {
		ev, err := events.Next()
		if errors.Is(err, io.EOF) {
			return nil, wire.Truncated(Name, "message_stop")
		}
		if err != nil {
			return nil, err
		}
		if len(ev.Data) == 0 {
			continue
		}
		var se streamEvent
		if err := json.Unmarshal(ev.Data, &se); err != nil {
			return nil, retry.Permanent(fmt.Errorf("anthropic: a stream event is not valid JSON: %w", err))
		}
		switch se.Type {
		case "message_start":
			started = true
			if se.Message != nil {
				msg = *se.Message
				msg.Content = nil
			}
		case "content_block_start":
			if se.ContentBlock == nil || se.Index != len(msg.Content) {
				return nil, retry.Permanent(fmt.Errorf("anthropic: malformed stream: block %d started out of order", se.Index))
			}
			if len(msg.Content) >= wire.MaxParts {
				return nil, wire.TooManyParts(Name)
			}
			msg.Content = append(msg.Content, *se.ContentBlock)
			inputs = append(inputs, nil)
			texts = append(texts, []byte(se.ContentBlock.Text))
		case "content_block_delta":
			if se.Index < 0 || se.Index >= len(msg.Content) {
				return nil, retry.Permanent(fmt.Errorf("anthropic: malformed stream: a delta for block %d, which did not start", se.Index))
			}
			switch se.Delta.Type {
			case "text_delta":
				size += len(se.Delta.Text)
				if size > model.MaxResponseBytes {
					return nil, tooLarge()
				}
				texts[se.Index] = append(texts[se.Index], se.Delta.Text...)
				if se.Delta.Text != "" {
					onText(se.Delta.Text)
				}
			case "input_json_delta":
				size += len(se.Delta.PartialJSON)
				if size > model.MaxResponseBytes {
					return nil, tooLarge()
				}
				inputs[se.Index] = append(inputs[se.Index], se.Delta.PartialJSON...)
			}
		case "message_delta":
			if se.Delta.StopReason != "" {
				msg.StopReason = se.Delta.StopReason
			}
			if se.Usage != nil {
				// Counts here are cumulative; input counts come only with
				// newer API versions.
				msg.Usage.OutputTokens = se.Usage.OutputTokens
				if se.Usage.InputTokens > 0 {
					msg.Usage.InputTokens = se.Usage.InputTokens
				}
				if se.Usage.CacheReadInputTokens > 0 || se.Usage.CacheCreationInputTokens > 0 {
					msg.Usage.CacheReadInputTokens = se.Usage.CacheReadInputTokens
					msg.Usage.CacheCreationInputTokens = se.Usage.CacheCreationInputTokens
				}
			}
		case "message_stop":
			if !started {
				// A proxy's bare stop is no answer, not an empty one
				// for the run to finish on.
				return nil, retry.Permanent(errors.New("anthropic: malformed stream: message_stop without message_start"))
			}
			stopped = true
		case "error":
			return nil, streamError(ev.Data)
		}
	}
	for i, in := range inputs {
		if len(in) > 0 {
			msg.Content[i].Input = in
		}
		msg.Content[i].Text = string(texts[i])
	}
	return parseMessage(&msg)
}

func tooLarge() error { return wire.TooLarge(Name) }
