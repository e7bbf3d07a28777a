package testlong

import "testing"

func TestRuns(t *testing.T) {
	t.Setenv(Env, "")
	if Enabled() || Runs(3, 30) != 3 {
		t.Errorf("without %s: Enabled %v, Runs %d; want false, 3", Env, Enabled(), Runs(3, 30))
	}
	t.Setenv(Env, "1")
	if !Enabled() || Runs(3, 30) != 30 {
		t.Errorf("with %s=1: Enabled %v, Runs %d; want true, 30", Env, Enabled(), Runs(3, 30))
	}
}

func TestSkip(t *testing.T) {
	t.Setenv(Env, "1")
	ran := false
	t.Run("long", func(t *testing.T) { Skip(t); ran = true })
	if !ran {
		t.Error("Skip skipped a test with the long suites on")
	}
	t.Setenv(Env, "")
	ran = false
	t.Run("short", func(t *testing.T) { Skip(t); ran = true })
	if ran {
		t.Error("Skip ran a test with the long suites off")
	}
}
