package model

import "fmt"

// Fit returns req as a model with caps can take it: images and audio it
// does not accept are left out of their messages, the message's text
// saying so; no output schema without typed output; no cache marks
// without caching; no tools without tools. req is not changed; when
// nothing must go, Fit returns req itself.
//
// M23: what a model does not take never reaches it.
func Fit(req *Request, caps Capabilities) *Request {
	out := *req
	changed := false
	if req.Output != nil && !caps.TypedOutput {
		out.Output, changed = nil, true
	}
	if req.Cache && !caps.Caching {
		out.Cache, out.CacheKey, changed = false, "", true
	}
	if len(req.Tools) > 0 && !caps.Tools {
		out.Tools, changed = nil, true
	}
	if msgs, dropped := fitMedia(req.Messages, caps); dropped {
		out.Messages, changed = msgs, true
	}
	if !changed {
		return req
	}
	return &out
}

// FitMedia leaves out of msgs the images and audio a model with caps
// does not take, saying so in each message's text; msgs is not changed,
// and is returned itself when every medium may go.
func FitMedia(msgs []Message, caps Capabilities) []Message {
	out, _ := fitMedia(msgs, caps)
	return out
}

func fitMedia(msgs []Message, caps Capabilities) ([]Message, bool) {
	var out []Message
	for i, m := range msgs {
		if len(m.Media) == 0 {
			continue
		}
		var kept []Media
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
			out = append([]Message(nil), msgs...)
		}
		out[i].Media = kept
		out[i].Text += "\n[" + notShown(images, audio) + " not shown: this model does not take them]"
	}
	if out == nil {
		return msgs, false
	}
	return out, true
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

// Or is what a model of c's or of o's takes: what a request to either of
// two models (a fallback chain's) may carry.
func (c Capabilities) Or(o Capabilities) Capabilities {
	return Capabilities{Tools: c.Tools || o.Tools, Images: c.Images || o.Images, Audio: c.Audio || o.Audio,
		TypedOutput: c.TypedOutput || o.TypedOutput, Caching: c.Caching || o.Caching}
}
