package model

import (
	"encoding/json"
	"testing"
)

func TestFit(t *testing.T) {
	img, wav := Media{MIME: "image/png", Data: []byte{1}}, Media{MIME: "audio/wav", Data: []byte{2}}
	req := &Request{
		Messages: []Message{{Role: User, Text: "look", Media: []Media{img, img, wav}}, {Role: Tool, CallID: "c", Text: "shot", Media: []Media{img}}},
		Tools:    []ToolDef{{Name: "t"}},
		Output:   &Output{Name: "o", Schema: json.RawMessage(`{"type":"object"}`)},
		Cache:    true, CacheKey: "k",
	}
	all := Capabilities{Tools: true, Images: true, Audio: true, TypedOutput: true, Caching: true}
	if got := Fit(req, all); got != req {
		t.Errorf("a model that takes everything got a copy")
	}
	got := Fit(req, Capabilities{Tools: true})
	if got == req || got.Output != nil || got.Cache || got.CacheKey != "" || len(got.Tools) != 1 {
		t.Errorf("fitted %+v", got)
	}
	if m := got.Messages[0]; len(m.Media) != 0 || m.Text != "look\n[2 images and 1 audio clip not shown: this model does not take them]" {
		t.Errorf("message 1: %q, %d media", m.Text, len(m.Media))
	}
	if m := got.Messages[1]; len(m.Media) != 0 || m.Text != "shot\n[1 image not shown: this model does not take them]" {
		t.Errorf("message 2: %q", m.Text)
	}
	if m := Fit(req, Capabilities{Images: true}).Messages[0]; len(m.Media) != 2 || m.Text != "look\n[1 audio clip not shown: this model does not take them]" {
		t.Errorf("images kept: %q, %d media", m.Text, len(m.Media))
	}
	if len(req.Messages[0].Media) != 3 || req.Messages[0].Text != "look" || req.Output == nil || !req.Cache {
		t.Errorf("Fit changed the request it was given")
	}
}
