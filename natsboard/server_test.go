package natsboard

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// runServer starts an embedded NATS server with JetStream on loopback.
func runServer(t testing.TB) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
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
	r, err := connect(ctx, urls(nodes...), "test setup", 3)
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
	// Route ports are picked by the kernel first, so each node can list
	// all three routes (a port taken in between makes NewServer fail
	// loudly, not the test flaky in a silent way).
	ports := make([]int, 3)
	var routes []string
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	var nodes []*server.Server
	for i := range 3 {
		o := &server.Options{ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1, JetStream: true,
			StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "fsd-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ","))}
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		nodes = append(nodes, s)
	}
	for _, s := range nodes {
		if !s.ReadyForConnections(30 * time.Second) {
			t.Fatal("embedded NATS node did not start")
		}
	}
	// Bounded: the meta group elects a leader within a few seconds.
	for range 600 {
		peers, current := 0, true
		for _, s := range nodes {
			if s.JetStreamIsLeader() {
				peers = len(s.JetStreamClusterPeers())
			}
			current = current && s.JetStreamIsCurrent()
		}
		if peers == 3 && current {
			return nodes
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the 3-node JetStream cluster did not form")
	return nil
}

// urls is the client URL list of nodes, as --nats takes it.
func urls(nodes ...*server.Server) string {
	var out []string
	for _, s := range nodes {
		out = append(out, s.ClientURL())
	}
	return strings.Join(out, ",")
}
