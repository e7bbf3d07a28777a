package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/natsboard"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// addNATSFlag registers --nats and the NATS credentials on fsd run.
func addNATSFlag(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringVar(&f.nats, "nats", "",
		"send the board's tasks to fsd worker processes through the NATS server `URL` (with JetStream; overrides the workflow's board.nats)")
	addNATSAuthFlags(cmd, &f.natsAuth)
}

// natsAuth are a NATS client's credentials and the signing key of task
// messages: files, so no secret shows in `ps` as one in the URL does.
type natsAuth struct {
	creds, nkey, signingKey string
}

// The environment variables that stand for the flags natsAuth holds
// (each a file path), and for fsd worker's --nats.
const (
	envNATSURL        = "FSD_NATS_URL"
	envNATSCreds      = "FSD_NATS_CREDS"
	envNATSNKey       = "FSD_NATS_NKEY"
	envNATSSigningKey = "FSD_NATS_SIGNING_KEY"
)

// addNATSAuthFlags registers --creds, --nkey and --signing-key.
func addNATSAuthFlags(cmd *cobra.Command, a *natsAuth) {
	cmd.Flags().StringVar(&a.creds, "creds", "", "NATS credentials `FILE` (.creds: user JWT and nkey seed; default $"+envNATSCreds+")")
	cmd.Flags().StringVar(&a.nkey, "nkey", "", "NATS nkey seed `FILE` (default $"+envNATSNKey+")")
	cmd.Flags().StringVar(&a.signingKey, "signing-key", "", "`FILE` with the key that signs task messages (32 bytes or more, e.g. openssl rand -hex 32); the same on fsd run and every worker (default $"+envNATSSigningKey+")")
}

// credentials are the flags' files, or the environment's.
func (a natsAuth) credentials() natsboard.Credentials {
	return natsboard.Credentials{Creds: orEnv(a.creds, envNATSCreds), NKey: orEnv(a.nkey, envNATSNKey)}
}

// signingKeyFile is --signing-key, or its variable.
func (a natsAuth) signingKeyFile() string { return orEnv(a.signingKey, envNATSSigningKey) }

func orEnv(v, env string) string {
	if v != "" {
		return v
	}
	return os.Getenv(env)
}

// coordinatorKey is the key a coordinator signs task messages and derives
// outcome keys with: --signing-key's, else the user's own, kept in the
// user's config folder (fsd/nats-signing.key, made on first use, readable
// by its owner only), so that fsd resume accepts the outcomes committed
// while the run's coordinator was down. Not in the runs folder: that
// holds run records only.
func coordinatorKey(a natsAuth, log zerolog.Logger) ([]byte, error) {
	if path := a.signingKeyFile(); path != "" {
		k, err := natsboard.ReadKey(path)
		if err != nil {
			return nil, usage("--signing-key %v", err)
		}
		return k, nil
	}
	conf, err := os.UserConfigDir()
	if err != nil {
		log.Warn().Err(err).Msg("no config folder for the NATS signing key: this run's key lives as long as this process, so a resume will refuse the outcomes committed meanwhile; give --signing-key FILE")
		return natsboard.NewKey(), nil
	}
	dir := filepath.Join(conf, "fsd")
	path := filepath.Join(dir, "nats-signing.key")
	k, err := natsboard.ReadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	k = natsboard.NewKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another run made it first
		return natsboard.ReadKey(path)
	}
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(f, "%x\n", k)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return k, err
}

// natsDispatcher connects to the run's NATS server, when --nats or the
// workflow's board.nats names one, and publishes the run's skills and
// script for the workers. It returns a nil dispatcher otherwise. A server
// that is not there fails the run at once (a worker waits for one): the
// run's tasks would wait, and nothing would say why.
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
	key, err := coordinatorKey(f.natsAuth, log)
	if err != nil {
		return nil, nil, fail(exitProblems, "the NATS signing key: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := natsboard.Connect(ctx, url, natsboard.Options{Logger: log, Credentials: f.natsAuth.credentials(), Key: key,
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
