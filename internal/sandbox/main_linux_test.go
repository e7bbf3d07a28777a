package sandbox

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// helperEnv makes the test binary, started as a sandboxed program, a
// helper instead of the tests: "dial ADDR" connects to ADDR; "fakefsd"
// is fsd starting a sandboxed call (see TestKillNineLeavesNothing).
const helperEnv = "FSD_SANDBOX_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "dial":
		c, err := net.DialTimeout("tcp", os.Args[1], 5*time.Second)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		c.Close()
		os.Exit(0)
	case "fakefsd":
		os.Exit(fakeFsd())
	}
	os.Exit(m.Run())
}
