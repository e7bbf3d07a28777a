package lazyre

import "testing"

func TestNew(t *testing.T) {
	re := New(`^a+$`)
	if !re().MatchString("aaa") || re().MatchString("b") {
		t.Fatal("pattern does not match as compiled")
	}
	if re() != re() {
		t.Error("compiled twice")
	}
}

func TestNewPanicsAtFirstUse(t *testing.T) {
	re := New(`(`) // no panic here: nothing is compiled yet
	defer func() {
		if recover() == nil {
			t.Error("a bad pattern did not panic at its first use")
		}
	}()
	re()
}
