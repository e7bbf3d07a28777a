package sandbox

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"
)

// helperEnv makes the test binary, started as a sandboxed program, a
// helper instead of the tests: "dial ADDR" connects to ADDR; "get URL"
// prints the status and body of URL fetched through $HTTP_PROXY, "status
// URL" only the status; "fakefsd"
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
	case "get", "status":
		// Through the proxy the sandbox names, NO_PROXY ignored: the
		// test's server is on loopback.
		proxy, err := url.Parse(os.Getenv("HTTP_PROXY"))
		if err != nil || proxy.Host == "" {
			fmt.Println("no proxy:", os.Getenv("HTTP_PROXY"))
			os.Exit(1)
		}
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 10 * time.Second}
		resp, err := c.Get(os.Args[1])
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		b, _ := io.ReadAll(resp.Body)
		if os.Getenv(helperEnv) == "status" {
			b = nil // a program that prints only the status
		}
		fmt.Printf("%d %s", resp.StatusCode, b)
		os.Exit(0)
	case "fakefsd":
		os.Exit(fakeFsd())
	}
	os.Exit(m.Run())
}
