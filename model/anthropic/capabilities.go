package anthropic

import (
	"strings"

	"github.com/fsdrun/fsd/model"
)

// Claude models without structured outputs (output_config.format), from
// Anthropic's structured outputs guide
// (https://platform.claude.com/docs/en/build-with-claude/structured-outputs,
// read 2026-12-01), which names the models that have them: the Claude 3
// families and the first Claude 4 models do not.
var untyped = []string{"claude-3", "claude-sonnet-4-0", "claude-sonnet-4-2025", "claude-opus-4-0", "claude-opus-4-2025"}

// CapabilitiesFor says what the model named name takes: every Claude model
// takes tools, images (base64 image blocks, in a user turn or a tool
// result) and cache_control breakpoints, none takes audio, and typed output
// goes to the models that have structured outputs.
func CapabilitiesFor(name string) model.Capabilities {
	c := model.Capabilities{Tools: true, Images: true, TypedOutput: true, Caching: true}
	for _, p := range untyped {
		if strings.HasPrefix(name, p) {
			c.TypedOutput = false
		}
	}
	return c
}

// Capabilities says what this model takes (model.Capable).
func (m *Model) Capabilities() model.Capabilities { return CapabilitiesFor(m.cfg.Model) }
