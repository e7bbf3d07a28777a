package eval

import (
	"context"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// Local is the simplest Start: it loads each job's workflow and runs it
// in this process with the model newModel builds for the job (a
// stand-in seeded by the repeat, say). The CLI's Start adds what fsd run
// does besides: provider routing, cassettes, trust, traces.
func Local(newModel func(Job) model.Model) Start {
	return func(_ context.Context, j Job, opts engine.Options, wrap func(model.Model) model.Model) (*engine.Run, func(error) error, error) {
		p, diags := spec.LoadProject(j.Suite.WorkflowPath())
		if err := diags.Err(); err != nil {
			return nil, nil, err
		}
		opts.Model = wrap(newModel(j))
		run, err := engine.New(p, opts)
		if err != nil {
			return nil, nil, err
		}
		return run, func(err error) error { return err }, nil
	}
}
