package runrecord_test

import (
	"os"
	"testing"

	"github.com/fsdrun/fsd/internal/keytest"
)

// TestMain gives the tests a record key of their own: they seal records,
// and must never make or read the key of the user who runs them.
func TestMain(m *testing.M) { os.Exit(keytest.Main(m)) }
