package openai

import (
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
)

func TestCapabilitiesFor(t *testing.T) {
	for name, want := range map[string]model.Capabilities{
		"gpt-5.4-mini":         {Tools: true, Images: true, TypedOutput: true, Caching: true},
		"o3-mini":              {Tools: true, TypedOutput: true, Caching: true},
		"gpt-4o-audio-preview": {Tools: true, Audio: true, TypedOutput: true, Caching: true},
		"llama3.2":             {Tools: true, TypedOutput: true, Caching: true},
	} {
		if got := CapabilitiesFor(name); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
}

// A model that takes no images (gpt-test, a name the table does not
// know) gets a note in their place.
func TestImagesLeftOutForATextModel(t *testing.T) {
	req := providertest.Variants(prov)["images"]
	_, sent := prov.Call(t, fakeserver.Reply{Body: okBody}, req)
	if !strings.Contains(string(sent), `Prepare the report.\n[1 image not shown: this model does not take them]`) {
		t.Errorf("no note in place of the image:\n%s", sent)
	}
}
