package sandbox

import (
	"os/exec"
	"syscall"
	"testing"
)

// benchTrue runs `true` b.N times under backend: the per-call overhead of
// the sandbox is the difference from BenchmarkTruePlain.
func benchTrue(b *testing.B, backend string) {
	ws := b.TempDir()
	for b.Loop() {
		cmd := exec.Command("true")
		cmd.Dir = ws
		cmd.Env = testEnv(b.TempDir())
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cleanup := useBackend(b, backend, cmd, Policy{Workspace: ws})
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		cleanup()
	}
}

func BenchmarkTruePlain(b *testing.B)  { benchTrue(b, "plain") }
func BenchmarkTrueNative(b *testing.B) { benchTrue(b, backendNative) }
func BenchmarkTrueBwrap(b *testing.B)  { benchTrue(b, backendBwrap) }
