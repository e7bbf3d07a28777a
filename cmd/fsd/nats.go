package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/natsboard"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// addNATSFlag registers --nats on fsd run.
func addNATSFlag(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringVar(&f.nats, "nats", "",
		"send the board's tasks to fsd worker processes through the NATS server `URL` (with JetStream; overrides the workflow's board.nats)")
}

// natsDispatcher connects to the run's NATS server, when --nats or the
// workflow's board.nats names one, and publishes the run's skills and
// script for the workers. It returns a nil dispatcher otherwise.
func natsDispatcher(path string, f runFlags, p *spec.Project, ms *models, log zerolog.Logger) (work.Dispatcher, func(), error) {
	url := f.nats
	if url == "" && p.Workflow.Board != nil {
		url = p.Workflow.Board.NATS
	}
	if url == "" || f.offline {
		return nil, nil, nil
	}
	// The workflow's board.nats was checked when it loaded.
	if err := checkNATSURL(f.nats); f.nats != "" && err != nil {
		return nil, nil, usage("--nats %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := natsboard.Connect(ctx, url, natsboard.Options{Logger: log,
		ModelName: func(n string) string { return ms.nameFor(model.Caller{Model: n}) }})
	if err != nil {
		return nil, nil, fail(exitProblems, "%v", err)
	}
	if err := c.Publish(ctx, p); err != nil {
		c.Close()
		return nil, nil, fail(exitProblems, "%s: sending skills to NATS: %v", path, err)
	}
	return c, c.Close, nil
}

// checkNATSURL says what is wrong with a comma-separated NATS URL list
// before anything dials it (natsboard.URLProblem). Errors never show
// credentials.
func checkNATSURL(list string) error {
	if bad, problem := natsboard.URLProblem(list); problem != "" {
		return fmt.Errorf("%s: %s", redactURL(bad), problem)
	}
	return nil
}
