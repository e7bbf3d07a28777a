package natsboard

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/syncbuf"
)

// oldestServer is the oldest nats-server fsd is tested against
// (docs/scale-out.md states it): Debian's package, when installed.
const oldestServer = "nats-server"

// natsServerBinary is the path of an installed nats-server, or skips the
// test; under CI (.ci/run installs it) its absence fails the test.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath(oldestServer)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (apt-get install nats-server): CI tests fsd against it", oldestServer)
		}
		t.Skipf("%s is not installed (apt-get install nats-server)", oldestServer)
	}
	return path
}

// startBinary runs the nats-server at bin with JetStream on loopback port
// with store, until stop (or the test's end), and waits until it takes
// connections.
func startBinary(t *testing.T, bin string, port int, store string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", store)
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-done
	}
	t.Cleanup(stop)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return stop
		}
		select {
		case <-done:
			t.Fatalf("%s exited:\n%s", bin, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %d:\n%s", bin, port, out.String())
		}
	}
}

// TestIdleWorkerFindsLostStore: the NATS server restarts without its store
// (a container without a volume) while a worker is idle, on the same port.
// The worker finds by looking that its queue is gone — a server may say
// nothing to an idle pull (nats-server 2.9 does not) — creates it again,
// says so, and the next run completes instead of waiting until its
// --timeout.
func TestIdleWorkerFindsLostStore(t *testing.T) {
	t.Parallel()
	servers := map[string]func(t *testing.T) (url string, restart func()){
		"embedded": func(t *testing.T) (string, func()) {
			srv := runServer(t)
			port := srv.Addr().(*net.TCPAddr).Port
			return srv.ClientURL(), func() {
				srv.Shutdown()
				srv.WaitForShutdown()
				runServerWith(t, server.Options{Port: port})
			}
		},
		oldestServer: func(t *testing.T) (string, func()) {
			bin := natsServerBinary(t)
			port := freePorts(t, 1)[0]
			stop := startBinary(t, bin, port, t.TempDir())
			return "nats://127.0.0.1:" + strconv.Itoa(port), func() {
				stop()
				startBinary(t, bin, port, t.TempDir())
			}
		},
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, restart := start(t)
			var logged syncbuf.Buffer
			serve(t, url, WorkerOptions{Work: engine.Work, Name: "w1", Logger: zerolog.New(&logged), AckWait: 2 * time.Second})
			restart()
			until(t, "the worker to say it created its queue again", func() bool {
				return strings.Contains(logged.String(), "the task queue was gone")
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			wf := fanout(t, 2, "")
			c, err := Connect(ctx, url, Options{})
			must(t, err)
			defer c.Close()
			must(t, c.Publish(ctx, project(t, wf)))
			res, err := runWorkflow(t, wf, c)
			if err != nil || res.Answer != "joined join" {
				t.Fatalf("run after the server lost its store: %v, answer %v\nworker:\n%s", err, res, logged.String())
			}
		})
	}
}
