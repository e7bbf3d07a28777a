package natsboard

// The docker-compose example (examples/nats), verified without docker:
// the compose file's own nats-server arguments start an in-process
// cluster, its worker commands start `fsd worker` processes, and the run
// its header tells users to type finishes with the in-process answer.
// Only what docker provides is rewritten: service hostnames and ports
// (to free loopback ports), named volumes (to temporary folders) and bind
// mounts (to the host folders they map).

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/internal/testlong"
)

const composeDir = "../examples/nats"

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	Environment map[string]string `yaml:"environment"`
	DependsOn   []string          `yaml:"depends_on"`
	Build       *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
}

// readCompose parses the compose file (anchors and merge keys resolved by
// the YAML decoder) and its header comment's shell commands.
func readCompose(t *testing.T) (services map[string]composeService, header [][]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(composeDir, "docker-compose.yaml"))
	must(t, err)
	var f struct {
		Services map[string]composeService `yaml:"services"`
	}
	must(t, yaml.Unmarshal(data, &f))
	line := ""
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		l = strings.TrimSpace(strings.TrimPrefix(l, "#"))
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			line += cont + " "
			continue
		}
		if line += l; strings.HasPrefix(line, "docker ") || strings.HasPrefix(line, "fsd ") {
			header = append(header, strings.Fields(line))
		}
		line = ""
	}
	return f.Services, header
}

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// addrs maps the addresses docker provides (service:port inside the
// compose network, localhost:published on the host) to loopback ones.
type addrs map[string]string

// rewrite rewrites every host:port of a comma-separated URL list; an
// address the compose network would not provide fails the test.
func (a addrs) rewrite(t *testing.T, list string, self string) string {
	t.Helper()
	var out []string
	for _, s := range strings.Split(list, ",") {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			t.Fatalf("compose: %q is not a URL", s)
		}
		host := u.Host
		if u.Hostname() == "0.0.0.0" && self != "" {
			host = self + ":" + u.Port()
		}
		to, ok := a[host]
		if !ok {
			t.Fatalf("compose: %s names %s, which no service of the compose file provides", s, u.Host)
		}
		u.Host = to
		out = append(out, u.String())
	}
	return strings.Join(out, ",")
}

// mounts maps a service's volumes: a bind mount to the host folder it
// names (relative to the compose file), a named volume to a new folder.
func mounts(t *testing.T, volumes []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			t.Fatalf("compose: volume %q has no container path", v)
		}
		src, dst := parts[0], parts[1]
		if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
			abs, err := filepath.Abs(filepath.Join(composeDir, src))
			must(t, err)
			if _, err := os.Stat(abs); err != nil {
				t.Fatalf("compose: volume %q: %v", v, err)
			}
			out[dst] = abs
		} else {
			out[dst] = t.TempDir()
		}
	}
	return out
}

// TestComposeExample starts examples/nats/docker-compose.yaml without
// docker: its three nats services from their own command lines (through
// nats-server's flag parser) as one JetStream cluster, its two workers
// from theirs, then the header's fsd run; the answer is the in-process
// one and the run's stream, bucket and object store have 3 replicas.
func TestComposeExample(t *testing.T) {
	testlong.Skip(t)
	services, header := readCompose(t)
	var natsNames, workerNames []string
	for name, s := range services {
		switch {
		case strings.HasPrefix(s.Image, "nats:"):
			natsNames = append(natsNames, name)
		case s.Build != nil && len(s.Command) > 0 && s.Command[0] == "worker":
			workerNames = append(workerNames, name)
		default:
			t.Fatalf("compose: service %s is neither a nats server nor an fsd worker", name)
		}
	}
	slices.Sort(natsNames)
	slices.Sort(workerNames)
	if len(natsNames) != 3 || len(workerNames) != 2 {
		t.Fatalf("compose: nats services %v, workers %v; want 3 and 2", natsNames, workerNames)
	}
	if !strings.HasPrefix(services[natsNames[0]].Image, "nats:2") {
		t.Errorf("compose: image %s; the tests run nats-server v2", services[natsNames[0]].Image)
	}

	// Docker's part: one client and one route port per service, published
	// ports on localhost (new ones if startNodes has to try again).
	var a addrs
	nodes := startNodes(t, func() []*server.Options {
		a = addrs{}
		for _, name := range natsNames {
			s := services[name]
			client := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			a[fmt.Sprintf("%s:%d", name, server.DEFAULT_PORT)] = client
			for _, p := range s.Ports {
				host, cont, ok := strings.Cut(p, ":")
				if !ok || cont != fmt.Sprint(server.DEFAULT_PORT) {
					t.Fatalf("compose: %s publishes %q; want HOST:%d", name, p, server.DEFAULT_PORT)
				}
				a["localhost:"+host] = client
			}
			i := slices.Index(s.Command, "--cluster")
			if i < 0 || i+1 == len(s.Command) {
				t.Fatalf("compose: %s has no --cluster", name)
			}
			u, err := url.Parse(s.Command[i+1])
			must(t, err)
			a[name+":"+u.Port()] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		}
		var opts []*server.Options
		for _, name := range natsNames {
			opts = append(opts, natsOptions(t, name, services[name], a))
		}
		return opts
	})
	waitCluster(t, nodes)

	// The workers, from their compose command lines.
	var workers []*proc
	for _, name := range workerNames {
		s := services[name]
		for _, d := range s.DependsOn {
			if !slices.Contains(natsNames, d) {
				t.Errorf("compose: %s depends on %s, which is no nats service", name, d)
			}
		}
		vols := mounts(t, s.Volumes)
		args := slices.Clone(s.Command)
		for i := range args {
			switch {
			case i > 0 && args[i-1] == "--nats":
				args[i] = a.rewrite(t, args[i], "")
			case i > 0 && args[i-1] == "--trust":
				dir, ok := vols[args[i]]
				if !ok {
					t.Fatalf("compose: %s trusts %s, which is no volume of it", name, args[i])
				}
				args[i] = dir
			}
		}
		// A container starts with an empty cache folder and the
		// environment the compose file gives it.
		args = append(args, "--cache", t.TempDir())
		for k, v := range s.Environment {
			if v != "${"+k+":-}" {
				t.Errorf("compose: %s sets %s to %q; a key must come from the user's environment (${%s:-})", name, k, v, k)
			}
		}
		workers = append(workers, start(t, t.TempDir(), nil, args...))
	}
	for i, w := range workers {
		until(t, workerNames[i]+" ready", func() bool { return strings.Contains(w.output(), "worker ready") })
	}

	// The header's commands, typed in the checkout's root.
	var run []string
	for _, cmd := range header {
		switch cmd[0] {
		case "docker":
			if i := slices.Index(cmd, "-f"); i < 0 || i+1 == len(cmd) || cmd[i+1] != "examples/nats/docker-compose.yaml" {
				t.Errorf("compose header: %s does not name this file from the checkout's root", strings.Join(cmd, " "))
			}
		case "fsd":
			run = slices.Clone(cmd[1:])
		}
	}
	i := slices.Index(run, "--nats")
	if len(run) < 2 || run[0] != "run" || i < 0 || i+1 == len(run) {
		t.Fatalf("compose header: no fsd run WORKFLOW --nats URLS command: %q", header)
	}
	run[i+1] = a.rewrite(t, run[i+1], "")
	root, err := filepath.Abs("..")
	must(t, err)
	local := start(t, root, nil, run[0], run[1], "--runs-dir", t.TempDir())
	local.wait(t)
	runs := t.TempDir()
	remote := start(t, root, nil, append(run, "--runs-dir", runs)...)
	remote.wait(t)
	want := lastLine(local.output())
	if got := lastLine(remote.output()); got != want || want == "" {
		t.Errorf("answer through the compose cluster %q, in process %q", got, want)
	}
	// The workers ran the skills' command tools: they trust the volume.
	fetched := 0
	for _, e := range events(t, onlyRun(t, runs)) {
		if e["type"] == "tool.result" && e["tool"] == "fetch_sales" {
			if e["error"] == true {
				t.Errorf("fetch_sales on a compose worker: %v", e["result"])
			}
			fetched++
		}
	}
	if fetched != 2 {
		t.Errorf("%d fetch_sales results in the run's events, want 2 (gather, gather-previous)", fetched)
	}

	// Created by the compose's own clients, the streams, bucket and object
	// store have a replica on every node: losing the one that leads the
	// task stream does not stop the next run.
	nc, err := nats.Connect(urls(nodes...))
	must(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader := ""
	for _, name := range []string{TaskStream, JournalStream, "KV_" + ResultsBucket, "OBJ_" + SkillsBucket} {
		st, err := js.Stream(ctx, name)
		must(t, err)
		info := st.CachedInfo()
		if info.Config.Replicas != 3 {
			t.Errorf("stream %s has %d replicas on the 3-node compose cluster, want 3", name, info.Config.Replicas)
		}
		if name == TaskStream && info.Cluster != nil {
			leader = info.Cluster.Leader
		}
	}
	nc.Close()
	for _, s := range nodes {
		if s.Name() == leader {
			s.Shutdown()
		}
	}
	again := start(t, root, nil, append(run, "--runs-dir", t.TempDir())...)
	again.wait(t)
	if got := lastLine(again.output()); got != want {
		t.Errorf("answer after the node leading %s (%q) stopped: %q, want %q", TaskStream, leader, got, want)
	}
}

// TestComposeDockerfile checks, without docker, that the Dockerfile the
// compose workers are built from builds what they run: the files it
// copies exist in the build context, its Go image is new enough for
// go.mod, it builds ./cmd/fsd as TestMain does (so every test here runs
// that build), and its entrypoint is that fsd, so the compose command
// [worker, …] is `fsd worker …`.
func TestComposeDockerfile(t *testing.T) {
	t.Parallel()
	services, _ := readCompose(t)
	var build *composeService
	for name, s := range services {
		if s.Build != nil {
			if build != nil && *build.Build != *s.Build {
				t.Errorf("compose: %s is built differently from the other workers", name)
			}
			build = &s
		}
	}
	if build == nil {
		t.Fatal("compose: no service is built from the checkout")
	}
	ctxDir, err := filepath.Abs(filepath.Join(composeDir, build.Build.Context))
	must(t, err)
	if _, err := os.Stat(filepath.Join(ctxDir, "go.mod")); err != nil {
		t.Fatalf("compose: build context %s is not the module's root: %v", build.Build.Context, err)
	}
	data, err := os.ReadFile(filepath.Join(ctxDir, build.Build.Dockerfile))
	must(t, err)

	var (
		stage, built, copied, entry string
		image                       string
	)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "FROM":
			stage = f[0]
			if len(f) == 4 && strings.EqualFold(f[2], "AS") {
				stage = f[3]
				image = f[1]
			}
		case "COPY":
			if strings.HasPrefix(f[1], "--from=") {
				if f[1] != "--from=build" || f[2] != built || len(f) != 4 {
					t.Errorf("Dockerfile: %q does not copy the built %s", line, built)
				}
				copied = f[3]
				continue
			}
			for _, src := range f[1 : len(f)-1] {
				if _, err := os.Stat(filepath.Join(ctxDir, src)); err != nil {
					t.Errorf("Dockerfile: %q: %v", line, err)
				}
			}
		case "RUN":
			cmd, ok := strings.CutPrefix(line, "RUN ")
			if !ok || !strings.Contains(cmd, "go build") {
				continue
			}
			if stage != "build" {
				t.Errorf("Dockerfile: go build outside the build stage")
			}
			var env []string
			w := strings.Fields(cmd)
			for len(w) > 0 && strings.Contains(w[0], "=") {
				env, w = append(env, w[0]), w[1:]
			}
			if !slices.Equal(env, dockerBuildEnv) {
				t.Errorf("Dockerfile builds with %v, TestMain with %v: the tests would not run the image's fsd", env, dockerBuildEnv)
			}
			if len(w) != 5 || w[0] != "go" || w[1] != "build" || w[2] != "-o" || w[4] != "./cmd/fsd" {
				t.Errorf("Dockerfile: %q; want go build -o FILE ./cmd/fsd", cmd)
				continue
			}
			built = w[3]
		case "ENTRYPOINT":
			entry = strings.Join(f[1:], " ")
		}
	}
	if built == "" {
		t.Fatal("Dockerfile: no go build -o FILE ./cmd/fsd")
	}
	if copied != "/usr/local/bin/fsd" || entry != `["fsd"]` {
		t.Errorf("Dockerfile: fsd copied to %q with entrypoint %s; want /usr/local/bin/fsd and [\"fsd\"]", copied, entry)
	}
	for _, s := range services {
		if s.Build != nil && (len(s.Command) == 0 || s.Command[0] != "worker") {
			t.Errorf("compose: a built service runs fsd %v, want fsd worker", s.Command)
		}
	}
	// golang:1.26 builds a module that asks for go 1.26.x.
	tag, ok := strings.CutPrefix(image, "golang:")
	if !ok {
		t.Fatalf("Dockerfile: build stage image %q is not golang:VERSION", image)
	}
	mod, err := os.ReadFile(filepath.Join(ctxDir, "go.mod"))
	must(t, err)
	for _, l := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok && !versionAtLeast(tag, v) {
			t.Errorf("Dockerfile: image %s is older than go.mod's go %s", image, v)
		}
		if v, ok := strings.CutPrefix(l, "toolchain go"); ok && !versionAtLeast(tag, v) {
			t.Errorf("Dockerfile: image %s is older than go.mod's toolchain go%s", image, v)
		}
	}
}

// versionAtLeast says whether an image tag such as 1.26 (the newest 1.26.x)
// or 1.26.2 satisfies a go.mod version such as 1.26.0.
func versionAtLeast(tag, want string) bool {
	a, b := strings.Split(tag, "."), strings.Split(want, ".")
	for i := range b {
		if i >= len(a) {
			return true // 1.26 is the newest patch of 1.26
		}
		var x, y int
		fmt.Sscan(a[i], &x)
		fmt.Sscan(b[i], &y)
		if x != y {
			return x > y
		}
	}
	return true
}

// TestFewerReplicasWarned: resources created with one replica on a
// 3-node cluster (by a client that knew one server, say) stay so; a
// worker that connects later says which, and how to raise them.
func TestFewerReplicasWarned(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := connect(ctx, urls(nodes...), dialing{name: "test setup", replicas: 1, log: zerolog.Nop()})
	must(t, err)
	r.Close()
	w := worker(t, urls(nodes...), "w1")
	until(t, "the worker ready", func() bool { return strings.Contains(w.output(), "worker ready") })
	for _, name := range []string{TaskStream, JournalStream, "KV_" + ResultsBucket, "OBJ_" + SkillsBucket} {
		if want := "nats stream edit " + name + " --replicas 3"; !strings.Contains(w.output(), want) {
			t.Errorf("the worker does not warn %q:\n%s", want, w.output())
		}
	}
}

// natsOptions are the options nats-server's own flag parser makes of a
// compose nats service's command, with what docker provides mapped: the
// client address, the cluster and route addresses, the -sd volume.
func natsOptions(t *testing.T, name string, s composeService, a addrs) *server.Options {
	t.Helper()
	vols := mounts(t, s.Volumes)
	args := []string{"-a", "127.0.0.1", "-p", strings.TrimPrefix(a[fmt.Sprintf("%s:%d", name, server.DEFAULT_PORT)], "127.0.0.1:")}
	for i := 0; i < len(s.Command); i++ {
		arg := s.Command[i]
		args = append(args, arg)
		if i+1 == len(s.Command) {
			break
		}
		switch arg {
		case "--cluster", "--routes":
			i++
			args = append(args, a.rewrite(t, s.Command[i], name))
		case "-sd":
			i++
			dir, ok := vols[s.Command[i]]
			if !ok {
				t.Fatalf("compose: %s stores JetStream in %s, which is no volume: its data dies with the container", name, s.Command[i])
			}
			args = append(args, dir)
		}
	}
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	opts, err := server.ConfigureOptions(fs, args, func() {}, func() {}, func() {})
	if err != nil {
		t.Fatalf("compose: nats-server %s: %v", strings.Join(s.Command, " "), err)
	}
	if !opts.JetStream {
		t.Fatalf("compose: %s runs without JetStream (-js)", name)
	}
	opts.NoLog, opts.NoSigs = true, true
	return opts
}

// TestFetchTroubleSaidOnce: a worker that cannot fetch tasks for a while
// (here its server turned JetStream off; a cluster that lost its quorum
// answers alike) warns once per distinct error, not once a second per
// fetching slot.
func TestFetchTroubleSaidOnce(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	w := worker(t, srv.ClientURL(), "w1", "--concurrency", "4")
	until(t, "the worker ready", func() bool { return strings.Contains(w.output(), "worker ready") })
	must(t, srv.DisableJetStream())
	failed := func() int {
		return strings.Count(w.output(), "cannot fetch tasks") + strings.Count(w.output(), "fetching a task")
	}
	// Bounded, generously: under load each failed fetch may take seconds.
	for i := 0; failed() < 4; i++ {
		if i == 3600 {
			t.Fatalf("no four failed fetches in three minutes:\n%s", w.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	warned := 0
	distinct := map[string]bool{}
	for _, l := range strings.Split(w.output(), "\n") {
		if strings.Contains(l, "cannot fetch tasks") || strings.Contains(l, "fetching a task") {
			if strings.Contains(l, " WRN ") {
				warned++
			}
			_, e, _ := strings.Cut(l, "error=")
			distinct[e] = true
		}
	}
	if warned == 0 || warned > len(distinct) {
		t.Errorf("%d warnings for %d distinct fetch errors, want one each:\n%s", warned, len(distinct), w.output())
	}
}
