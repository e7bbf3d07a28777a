// Package httpguard is the door of fsd's HTTP servers — the web view
// (fsd ui) and MCP over HTTP (fsd mcp serve --http). Both hand run records
// or runs to whoever reaches them, so both listen on loopback unless told
// otherwise and answer only requests addressed to the server by a name it
// knows: the Host header and, when a browser sends one, the Origin. That
// stops a page on another site from reading the server through a DNS name
// rebound to 127.0.0.1, or driving it from the user's browser.
//
// It is not authentication: anyone who can connect and name the server
// reads everything it serves.
package httpguard
