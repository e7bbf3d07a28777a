package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/retry"
)

func TestCapabilitiesFor(t *testing.T) {
	typed := model.Capabilities{Tools: true, Images: true, TypedOutput: true, Caching: true}
	untyped := model.Capabilities{Tools: true, Images: true, Caching: true}
	for name, want := range map[string]model.Capabilities{
		"claude-sonnet-4-5": typed, "claude-opus-4-1": typed, "claude-3-5-haiku-latest": untyped, "claude-sonnet-4-0": untyped,
	} {
		if got := CapabilitiesFor(name); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
}

// A model without structured outputs is sent no output_config.
func TestNoOutputConfigForAnUntypedModel(t *testing.T) {
	old := providertest.Provider{New: func(url string, p retry.Policy) (model.Model, error) {
		return New(Config{Model: "claude-3-5-haiku-latest", APIKey: testKey, BaseURL: url, Retry: p})
	}, Request: conversation}
	req := providertest.Variants(old)["typed output, strict"]
	_, sent := old.Call(t, fakeserver.Reply{Body: okBody}, req)
	var body map[string]json.RawMessage
	if err := json.Unmarshal(sent, &body); err != nil {
		t.Fatal(err)
	}
	if _, ok := body["output_config"]; ok || strings.Contains(string(sent), "json_schema") {
		t.Errorf("output_config sent to a model without structured outputs:\n%s", sent)
	}
}
