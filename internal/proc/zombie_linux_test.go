package proc

import (
	"os/exec"
	"testing"
	"time"
)

// A child that has exited but is not reaped yet is not alive, though
// signal 0 still reaches it; one that is still running is.
func TestZombieIsNotAlive(t *testing.T) {
	running := exec.Command("sleep", "30")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = running.Process.Kill(); _ = running.Wait() }()
	if !Alive(running.Process.Pid) {
		t.Errorf("running child %d is not alive", running.Process.Pid)
	}

	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	// Not reaped until Wait: wait (bounded) for the kernel to mark it a
	// zombie.
	deadline := time.Now().Add(10 * time.Second)
	for !exited(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d never became a zombie", cmd.Process.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if Alive(cmd.Process.Pid) {
		t.Errorf("zombie %d is alive", cmd.Process.Pid)
	}
}
