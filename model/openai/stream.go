package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	oai "github.com/openai/openai-go/v3"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/retry"
)

// partialCall is a tool call being assembled from stream chunks: the id and
// name arrive first, the arguments in pieces, all keyed by the call's index.
type partialCall struct {
	id, name string
	args     []byte
}

func (m *Model) stream(ctx context.Context, params oai.ChatCompletionNewParams, onText func(string)) (*model.Response, error) {
	params.StreamOptions.IncludeUsage = oai.Bool(true)
	s := m.client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()

	resp := &model.Response{}
	var text []byte
	calls := map[int64]*partialCall{}
	sawChoice := false
	id := ""
	for s.Next() {
		chunk := s.Current()
		if chunk.ID != "" {
			id = chunk.ID
		}
		if chunk.JSON.Usage.Valid() {
			resp.Usage = model.Usage{InputTokens: int(chunk.Usage.PromptTokens), OutputTokens: int(chunk.Usage.CompletionTokens)}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			sawChoice = true
			if d := ch.Delta.Content; d != "" {
				text = append(text, d...)
				onText(d)
			}
			for _, tc := range ch.Delta.ToolCalls {
				pc := calls[tc.Index]
				if pc == nil {
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
			}
		}
	}
	if err := s.Err(); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, retry.Permanent(fmt.Errorf("openai: a stream event is not valid JSON: %w", err))
		}
		return nil, err
	}
	if !sawChoice {
		return nil, errNoChoices(id)
	}
	resp.Text = string(text)
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		pc := calls[i]
		resp.Calls = append(resp.Calls, model.ToolCall{ID: pc.id, Name: pc.name, Args: Args(string(pc.args))})
	}
	return resp, nil
}
