package engine

import (
	"fmt"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/tool"
)

// hooks are what call c may ask of the run while it is
// in flight: its progress reports become tool.progress events of the
// generator's task.
//
// P1: progress becomes events of the call.
func (g *generator) hooks(c model.ToolCall) tool.Hooks {
	return tool.Hooks{Media: func(m []model.Media) { g.media = m }, Progress: func(p tool.Progress) {
		if g.emit == nil {
			return
		}
		g.emit(event.Event{Type: event.ToolProgress, Task: g.caller.TaskID, Agent: g.caller.Agent, Tool: c.Name, CallID: c.ID,
			Text: p.Message, Progress: &event.Progress{Done: p.Done, Total: p.Total}})
	}}
}

// mediaFor leaves out of a request's messages the images and audio the
// model does not take, saying so in the message's text (which already
// names the artifact that keeps them); msgs is not changed.
//
// P2: media go only to a model whose capabilities take them.
func mediaFor(msgs []model.Message, caps model.Capabilities) []model.Message {
	var out []model.Message
	for i, m := range msgs {
		if len(m.Media) == 0 {
			continue
		}
		var kept []model.Media
		var images, audio int
		for _, md := range m.Media {
			switch {
			case md.IsImage() && caps.Images, md.IsAudio() && caps.Audio:
				kept = append(kept, md)
			case md.IsImage():
				images++
			default:
				audio++
			}
		}
		if images+audio == 0 {
			continue
		}
		if out == nil {
			out = append([]model.Message(nil), msgs...)
		}
		out[i].Media = kept
		out[i].Text += "\n[" + notShown(images, audio) + " not shown: this model does not take them]"
	}
	if out == nil {
		return msgs
	}
	return out
}

func notShown(images, audio int) string {
	plural := func(n int, what string) string {
		if n == 1 {
			return "1 " + what
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	switch {
	case images > 0 && audio > 0:
		return plural(images, "image") + " and " + plural(audio, "audio clip")
	case images > 0:
		return plural(images, "image")
	}
	return plural(audio, "audio clip")
}
