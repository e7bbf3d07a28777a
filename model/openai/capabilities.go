package openai

import (
	"strings"

	"github.com/fsdrun/fsd/model"
)

// What OpenAI's models take, by name prefix, from the models pages of
// OpenAI's documentation (https://platform.openai.com/docs/models, read
// 2026-12-01): the GPT-4o, 4.1, 4.5 and 5 families and the o-series (but
// o1-mini and o3-mini) take images; the audio models take audio in
// input_audio parts, and no images. The first prefix that fits wins.
var imageless = []string{"o1-mini", "o3-mini"}
var audio = []string{"gpt-4o-audio", "gpt-4o-mini-audio", "gpt-audio"}
var vision = []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-4-turbo", "gpt-5", "o1", "o3", "o4"}

// CapabilitiesFor says what the model named name takes. Every model gets
// tools, typed output (response_format json_schema) and caching
// (prompt_cache_key); images and audio only a model the table knows takes
// them, so a model served by a compatible server under another name (an
// Ollama model) gets text.
func CapabilitiesFor(name string) model.Capabilities {
	c := model.Capabilities{Tools: true, TypedOutput: true, Caching: true}
	has := func(prefixes []string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has(imageless):
	case has(audio):
		c.Audio = true
	case has(vision):
		c.Images = true
	}
	return c
}

// Capabilities says what this model takes (model.Capable).
func (m *Model) Capabilities() model.Capabilities { return CapabilitiesFor(m.cfg.Model) }
