package main

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/cassette"
	"github.com/fsdrun/fsd/model/provider"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/model/standin"
	"github.com/fsdrun/fsd/spec"
)

// models resolves the model of every generator of a run: `--model`
// overrides all; otherwise the host uses its own or the workflow's, and
// each agent its own or the workflow's.
type models struct {
	override string
	// offline skips credential checks: nothing will be called (fsd context).
	offline bool
	// remote: the board's tasks run on fsd workers (--nats), which call
	// their models with their own keys; this process calls the host's only.
	remote  bool
	project *spec.Project
	handle  scripted.HandleFunc
	log     *zerolog.Logger
	// seed seeds the stand-in model (standin.Model.Seed).
	seed int

	mu    sync.Mutex
	built map[string]model.Model
}

// names lists every model string the run may use, for checking up front.
func (m *models) names() []string {
	set := map[string]bool{m.def(): true}
	if m.override == "" {
		if h := m.project.Workflow.Host; h != nil && h.Model != "" {
			set[h.Model] = true
		}
		for _, s := range m.project.Skills {
			for _, a := range s.Agents {
				if a.Model != "" {
					set[a.Model] = true
				}
			}
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (m *models) def() string {
	switch {
	case m.override != "":
		return m.override
	case m.project.Workflow.Model != "":
		return m.project.Workflow.Model
	}
	return provider.Scripted
}

// nameFor picks the model string of a caller: --model, else the one the
// engine resolved for it (its agent's, the host's or the workflow's, as
// the manifests are now), else the default.
func (m *models) nameFor(c model.Caller) string {
	switch {
	case m.override != "":
		return m.override
	case c.Model != "":
		return c.Model
	}
	return m.def()
}

func (m *models) get(name string) (model.Model, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if md, ok := m.built[name]; ok {
		return md, nil
	}
	if name == standin.Name {
		md := standin.New(m.seed)
		m.remember(name, md)
		return md, nil
	}
	md, err := provider.New(name, os.Getenv, provider.Options{Logger: m.log, Scripted: m.scripted})
	if err != nil {
		return nil, err
	}
	m.remember(name, md)
	return md, nil
}

// remember keeps a model built for name; m.mu is held.
func (m *models) remember(name string, md model.Model) {
	if m.built == nil {
		m.built = map[string]model.Model{}
	}
	m.built[name] = md
}

func (m *models) scripted() (model.Model, error) {
	wf := m.project.Workflow
	if wf.Script == "" {
		return nil, fmt.Errorf("%s: the model is scripted but the workflow names no script (add `script: NAME.script.yaml`)", wf.File)
	}
	s, err := loadScript(wf.ScriptPath())
	if err != nil {
		return nil, err
	}
	return scripted.New(s, m.handle), nil
}

// loadScript loads a scripted model's script once spec has checked it as
// `fsd validate` does (limits, aliases, schema, step shapes), so a run
// reads only what validation passes.
func loadScript(path string) (*scripted.Script, error) {
	if err := spec.ValidateScript(path).Err(); err != nil {
		return nil, err
	}
	return scripted.Load(path)
}

// Generate routes a request to its caller's model.
func (m *models) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	name := m.nameFor(req.Caller)
	md, err := m.get(name)
	if err != nil {
		return nil, err
	}
	resp, err := md.Generate(ctx, req)
	if resp != nil && resp.Model == "" {
		// What the call is priced by (--model overrides); a fallback
		// chain names the model of it that answered.
		resp.Model = name
	}
	return resp, err
}

// CapabilitiesFor says what the model that answers c's requests
// accepts: the engine leaves out of them the images and audio it does not.
func (m *models) CapabilitiesFor(c model.Caller) model.Capabilities {
	md, err := m.get(m.nameFor(c))
	if err != nil {
		return model.CapabilitiesOf(nil)
	}
	return model.CapabilitiesOf(md)
}

// hostCalls tells whether the workflow's host calls the model n.
func (m *models) hostCalls(n string) bool {
	h := m.project.Workflow.Host
	if h == nil {
		return false
	}
	if m.override == "" && h.Model != "" {
		return n == h.Model
	}
	return n == m.def()
}

// check fails before the run starts on a malformed model string, an
// unknown provider or a missing API key, and builds the scripted model so
// a missing script is reported now too.
func (m *models) check() error {
	for _, n := range m.names() {
		if n == standin.Name {
			continue // built in, offline: nothing to check
		}
		if (m.offline || m.remote && !m.hostCalls(n)) && n != provider.Scripted {
			// fsd context calls no model, and with --nats the workers call
			// the agents' models: the form is all that matters here.
			if _, err := provider.ParseChain(n); err != nil {
				return err
			}
			continue
		}
		if err := provider.Check(n, os.Getenv); err != nil {
			return err
		}
		if n == provider.Scripted {
			if _, err := m.get(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// withCassette wires --record-cassette and --replay around the run's model. It returns
// the model to run with, the random source for handles (seeded so a replay
// draws the same handles), and a finish function to call after the run.
func withCassette(m *models, recordPath, replayPath string) (model.Model, io.Reader, func(runErr error) error, error) {
	secrets := redact.FromEnv(os.Environ())
	noop := func(err error) error { return err }
	switch {
	case replayPath != "":
		rp, err := cassette.OpenReplayer(replayPath, cassette.WithSecrets(secrets...))
		if err != nil {
			return nil, nil, nil, err
		}
		seed, err := hex.DecodeString(rp.Meta()["seed"])
		if err != nil || len(seed) != 32 {
			return nil, nil, nil, fmt.Errorf("%s: the cassette has no handle seed; record it again with fsd run --record-cassette", replayPath)
		}
		// A replay answers as the recorded model whatever --model says;
		// another --model would put a model that never answered in the
		// run's record and an eval's report.
		if rec := rp.Meta()["model"]; m.override != "" && rec != "" && rec != m.override {
			return nil, nil, nil, fmt.Errorf("%s: the cassette was recorded with the model %s, not --model %s; replay it without --model, or record it again", replayPath, rec, m.override)
		}
		finish := func(runErr error) error {
			if runErr != nil {
				return runErr
			}
			if left := rp.Unused(); len(left) > 0 {
				return fmt.Errorf("replay: the run ended before using the whole cassette (%s)", strings.Join(left, "; "))
			}
			return nil
		}
		return rp, rand.NewChaCha8([32]byte(seed)), finish, nil
	case recordPath != "":
		if err := m.check(); err != nil {
			return nil, nil, nil, err
		}
		var seed [32]byte
		if _, err := cryptorand.Read(seed[:]); err != nil {
			return nil, nil, nil, err
		}
		f, err := os.Create(recordPath)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--record-cassette: %w", err)
		}
		rec := cassette.NewRecorder(m, f, cassette.WithSecrets(secrets...),
			cassette.WithMeta("model", strings.Join(m.names(), ",")),
			cassette.WithMeta("seed", hex.EncodeToString(seed[:])))
		finish := func(runErr error) error {
			cerr := f.Close()
			return errors.Join(runErr, cerr)
		}
		return rec, rand.NewChaCha8(seed), finish, nil
	}
	if err := m.check(); err != nil {
		return nil, nil, nil, err
	}
	return m, nil, noop, nil
}
