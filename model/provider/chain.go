package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/retry"
)

// ParseChain checks every model string of s, a plain model string or a
// fallback chain's strings joined by model.ChainSep, and returns them in
// order. A chain names two or more distinct provider models; the scripted
// model is never one of them.
func ParseChain(s string) ([]Spec, error) {
	names := model.Chain(strings.TrimSpace(s))
	if len(names) <= 1 {
		sp, err := Parse(s)
		return []Spec{sp}, err
	}
	specs := make([]Spec, 0, len(names))
	for i, n := range names {
		sp, err := Parse(n)
		if err != nil {
			return nil, err
		}
		if sp.Provider == Scripted {
			return nil, fmt.Errorf("model chain %q: scripted cannot be part of a fallback chain", s)
		}
		if slices.Contains(names[:i], n) {
			return nil, fmt.Errorf("model chain %q: %s is named twice", s, n)
		}
		specs = append(specs, sp)
	}
	return specs, nil
}

// chain is a fallback chain: each request goes to its first model, or to
// the one that answered the generator's last step (Caller.Answered), and
// on to the next when a model's retries are spent on an error another
// attempt might mend (retry.Retryable). The response names the model that
// answered. Each model leaves out of its request what it does not take.
type chain struct {
	names  []string
	models []model.Model
	log    *zerolog.Logger
}

var _ model.Capable = (*chain)(nil)

// Generate asks the chain's models in turn.
//
// M21: a model that failed for good on an unavailability (its retries
// spent) gives way to the next; any other failure ends the call.
func (c *chain) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	start := max(slices.Index(c.names, req.Caller.Answered), 0)
	var failed []string
	for i := start; i < len(c.models); i++ {
		r, streamed := trackText(req)
		resp, err := c.models[i].Generate(ctx, r)
		if err == nil {
			if resp.Model == "" {
				resp.Model = c.names[i]
			}
			return resp, nil
		}
		last := i == len(c.models)-1
		if ctx.Err() != nil || !retry.Retryable(err) || last {
			if len(failed) > 0 {
				// Two models of one provider fail alike: name the last too.
				err = fmt.Errorf("%s failed: %w (after %s)", c.names[i], err, strings.Join(failed, "; "))
			}
			return resp, err
		}
		failed = append(failed, c.names[i]+" failed: "+err.Error())
		if c.log != nil {
			c.log.Warn().Str("model", c.names[i]).Str("next", c.names[i+1]).Str("error", err.Error()).
				Msg("model unavailable after its retries; the next model of the chain answers")
		}
		if *streamed && req.OnReset != nil {
			// The failed model's streamed text is void: the next model's
			// deltas start over, as a retry's do.
			req.OnReset()
		}
	}
	return nil, errors.New("model chain: no model") // unreachable: a chain has two or more
}

// trackText returns req with OnText wrapped to note whether any delta
// went out.
func trackText(req *model.Request) (*model.Request, *bool) {
	var streamed bool
	if req.OnText == nil {
		return req, &streamed
	}
	r := *req
	on := req.OnText
	r.OnText = func(d string) { streamed = true; on(d) }
	return &r, &streamed
}

// Capabilities are what any model of the chain takes: the request keeps
// it, and each model leaves out what it does not take.
func (c *chain) Capabilities() model.Capabilities {
	var u model.Capabilities
	for _, m := range c.models {
		u = u.Or(model.CapabilitiesOf(m))
	}
	return u
}

// Capabilities says what the model a model string names takes, from its
// provider's own table, without credentials: the provider's model is
// built for a placeholder server (building makes no request). For a chain
// it is what any of its models takes; for scripted, or a string that does
// not parse, model.CapabilitiesOf's default.
func Capabilities(modelString string) model.Capabilities {
	specs, err := ParseChain(modelString)
	var u model.Capabilities
	if err != nil {
		return model.CapabilitiesOf(nil)
	}
	for _, sp := range specs {
		p := lookup(sp.Provider)
		if p == nil {
			u = u.Or(model.CapabilitiesOf(nil))
			continue
		}
		m, err := p.build(conn{model: sp.Model, baseURL: "http://capabilities.invalid/"})
		if err != nil {
			u = u.Or(model.CapabilitiesOf(nil))
			continue
		}
		u = u.Or(model.CapabilitiesOf(m))
	}
	return u
}
