package natsboard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/fsdrun/fsd/engine"
)

// TestTaskOverMaxPayload: a task message larger than the server accepts
// fails its dispatch with an error that says which setting to raise.
func TestTaskOverMaxPayload(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, MaxPayload: 8 << 10,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	must(t, err)
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("embedded NATS server did not start")
	}
	defer s.Shutdown()
	ctx := context.Background()
	c, err := Connect(ctx, s.ClientURL(), Options{})
	must(t, err)
	defer c.Close()
	_, err = c.Dispatch(ctx, &engine.RemoteTask{Run: "r1", Task: "big", Attempt: 1, Goal: "g", Input: strings.Repeat("x", 16<<10)}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "over the NATS server's max_payload (8192): raise max_payload") {
		t.Errorf("dispatch of a 16 KiB task: %v", err)
	}
}
