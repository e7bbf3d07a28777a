package main

import (
	"context"
	"testing"

	"github.com/fsdrun/fsd/model"
)

// seer is a model that takes images.
type seer struct{}

func (seer) Generate(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{}, nil
}
func (seer) Capabilities() model.Capabilities { return model.Capabilities{Tools: true, Images: true} }

// The router answers for the model a caller's requests go to, so the
// engine sends images only where that model takes them.
func TestRouterCapabilitiesAreTheCallersModels(t *testing.T) {
	m := &models{built: map[string]model.Model{"vision/v1": seer{}, "text/t1": model.Func(seer{}.Generate)}}
	if c := model.CapabilitiesFor(m, model.Caller{Model: "vision/v1"}); !c.Images {
		t.Errorf("vision/v1: %+v, want images", c)
	}
	if c := model.CapabilitiesFor(m, model.Caller{Model: "text/t1"}); c.Images {
		t.Errorf("text/t1: %+v, want no images", c)
	}
}
