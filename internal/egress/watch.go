package egress

import (
	"net"
	"strings"
)

// denialStart starts a denial's text (Denial.Error), the body of the
// proxy's 403.
const denialStart = "fsd sandbox: the network to "

// maxDenialHead bounds what WatchDenials holds of an answer's start.
const maxDenialHead = 8 << 10

// WatchDenials wraps c, a connection to the Proxy, so that when the
// proxy's first answer on it is a denial, say gets the denial's line
// (what was denied and the setting that allows it) as the program reads
// it. The launcher says it on the program's stderr: a program that
// prints only "403" still leaves the reason in its output. What passes
// through is unchanged.
//
// E6: a denial's reason reaches the program's output.
func WatchDenials(c net.Conn, say func(line string)) net.Conn {
	return &watchConn{Conn: c, say: say}
}

type watchConn struct {
	net.Conn
	say  func(string)
	head []byte // the first answer's start, while it may be a denial
	done bool
}

func (c *watchConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.done && n > 0 {
		c.head = append(c.head, b[:n]...)
		c.look()
	}
	return n, err
}

// look decides, as the answer's start grows, whether it is a denial.
func (c *watchConn) look() {
	// "HTTP/1.x 403 ": the proxy answers in the version it was asked in
	// (Python's CONNECT is HTTP/1.0).
	head := string(c.head)
	if len(head) < len("HTTP/1.x 403 ") {
		return
	}
	if len(head) > maxDenialHead || !strings.HasPrefix(head, "HTTP/1.") || head[8:13] != " 403 " {
		c.done, c.head = true, nil
		return
	}
	_, body, ok := strings.Cut(head, "\r\n\r\n")
	if !ok {
		return
	}
	line, _, ok := strings.Cut(body, "\n")
	if !ok {
		return
	}
	if strings.HasPrefix(line, denialStart) {
		c.say(line)
	}
	c.done, c.head = true, nil
}

func (c *watchConn) CloseWrite() error { return closeWrite(c.Conn) }
