package gemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// stream reads one streamed answer (streamGenerateContent with alt=sse):
// each event is a response holding what is new — text to append, whole
// function calls, the latest usage. It is complete once a candidate
// carries a finish reason; a stream that ends before one was cut short
// and is retried. (M2)
func stream(events *wire.SSE, onText func(string)) (*model.Response, error) {
	whole := &generateResponse{}
	var parts []part
	finish, size := "", 0
	for finish == "" {
		ev, err := events.Next()
		if errors.Is(err, io.EOF) {
			if whole.PromptFeedback != nil && whole.PromptFeedback.BlockReason != "" {
				_, err := first(whole) // a blocked prompt sends no candidate at all
				return nil, err
			}
			return nil, wire.Truncated(Name, "a finish reason")
		}
		if err != nil {
			return nil, err
		}
		if len(ev.Data) == 0 {
			continue
		}
		var chunk generateResponse
		if err := json.Unmarshal(ev.Data, &chunk); err != nil {
			return nil, retry.Permanent(fmt.Errorf("gemini: a stream event is not valid JSON: %w", err))
		}
		if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
			return nil, streamError(chunk.Error)
		}
		if chunk.UsageMetadata != nil {
			whole.UsageMetadata = chunk.UsageMetadata // counts so far
		}
		if chunk.PromptFeedback != nil {
			whole.PromptFeedback = chunk.PromptFeedback
		}
		if chunk.ResponseID != "" {
			whole.ResponseID = chunk.ResponseID
		}
		if chunk.ModelVersion != "" {
			whole.ModelVersion = chunk.ModelVersion
		}
		c, err := first(&chunk)
		if err != nil {
			if whole.PromptFeedback != nil && whole.PromptFeedback.BlockReason != "" {
				return nil, err
			}
			continue // usage alone, say
		}
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				if p.Thought && p.FunctionCall == nil {
					// The answer reads nothing of a thought (parseResponse):
					// held, its text would escape the cap.
					continue
				}
				if p.FunctionCall != nil {
					size += len(p.FunctionCall.Args)
				} else {
					size += len(p.Text)
				}
				// A signature is held with its part, whatever its size.
				if size += len(p.ThoughtSignature); size > model.MaxResponseBytes {
					return nil, tooLarge()
				}
				if len(parts) >= wire.MaxParts {
					return nil, wire.TooManyParts(Name)
				}
				if p.Text != "" && !p.Thought && p.FunctionCall == nil {
					onText(p.Text)
				}
				parts = append(parts, p)
			}
		}
		if c.FinishReason != "" {
			finish = c.FinishReason
			whole.Candidates = []candidate{{Content: &content{Role: "model", Parts: parts}, FinishReason: finish, FinishMessage: c.FinishMessage}}
		}
	}
	return parseResponse(whole)
}
