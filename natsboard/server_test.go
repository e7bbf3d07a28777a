package natsboard

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// runServer starts an embedded NATS server with JetStream on loopback.
func runServer(t testing.TB) *server.Server {
	t.Helper()
	return runServerWith(t, server.Options{})
}

// runServerWith starts an embedded NATS server with JetStream on
// loopback, with o's other settings (max_payload, credentials; a port and
// a store folder to restart a server on, else any port and a new folder).
func runServerWith(t testing.TB, o server.Options) *server.Server {
	t.Helper()
	if o.Port == 0 {
		o.Port = -1
	}
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	o.Host, o.JetStream, o.NoLog, o.NoSigs = "127.0.0.1", true, true, true
	s, err := server.NewServer(&o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("embedded NATS server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// runCluster starts a 3-node JetStream cluster in this process, all on
// loopback, with fsd's resources created with 3 replicas.
func runCluster(t testing.TB) []*server.Server {
	t.Helper()
	nodes := startCluster(t)
	// Create the resources with 3 replicas now, as an operator would: the
	// tests are about losing a node, not about racing clients on a cluster
	// that has just formed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := connect(ctx, urls(nodes...), dialing{name: "test setup", replicas: 3, log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	return nodes
}

// startCluster starts a 3-node JetStream cluster in this process, all on
// loopback, and waits until its meta group has a leader and 3 peers.
func startCluster(t testing.TB) []*server.Server {
	t.Helper()
	nodes := startNodes(t, func() []*server.Options {
		// Route ports are picked by the kernel first, so each node can
		// list all three routes.
		var opts []*server.Options
		var routes []string
		ports := freePorts(t, 3)
		for _, p := range ports {
			routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
		}
		for i, p := range ports {
			opts = append(opts, &server.Options{ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1, JetStream: true,
				StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
				Cluster: server.ClusterOpts{Name: "fsd-test", Host: "127.0.0.1", Port: p},
				Routes:  server.RoutesFromStr(strings.Join(routes, ","))})
		}
		return opts
	})
	waitCluster(t, nodes)
	return nodes
}

// freePorts are n loopback ports nobody listened on a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	return ports
}

// startNodes starts the servers options gives and waits until each takes
// connections. A port picked free but taken by another process before a
// node listens keeps that node from starting (silently: its listener
// fails in Start): then every node is stopped and options gives new
// ones, at most three times.
func startNodes(t testing.TB, options func() []*server.Options) []*server.Server {
	t.Helper()
	for range 3 {
		var nodes []*server.Server
		for _, o := range options() {
			s, err := server.NewServer(o)
			if err != nil {
				t.Fatal(err)
			}
			go s.Start()
			t.Cleanup(s.Shutdown)
			nodes = append(nodes, s)
		}
		ready := true
		for _, s := range nodes {
			ready = ready && s.ReadyForConnections(30*time.Second)
		}
		if ready {
			return nodes
		}
		for _, s := range nodes {
			s.Shutdown()
		}
	}
	t.Fatal("embedded NATS nodes did not start, three times")
	return nil
}

// waitCluster waits until nodes' JetStream meta group has a leader with
// every node a current peer.
func waitCluster(t testing.TB, nodes []*server.Server) {
	t.Helper()
	// Bounded: the meta group elects a leader within a few seconds.
	for range 600 {
		peers, current := 0, true
		for _, s := range nodes {
			if s.JetStreamIsLeader() {
				peers = len(s.JetStreamClusterPeers())
			}
			current = current && s.JetStreamIsCurrent()
		}
		if peers == len(nodes) && current {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the %d-node JetStream cluster did not form", len(nodes))
}

// urls is the client URL list of nodes, as --nats takes it.
func urls(nodes ...*server.Server) string {
	var out []string
	for _, s := range nodes {
		out = append(out, s.ClientURL())
	}
	return strings.Join(out, ",")
}
