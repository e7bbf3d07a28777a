// Package promptcache models Anthropic's prompt cache for tests of what a
// provider could serve from it: the stand-in Messages servers of the model
// and CLI tests send each request body through it and read back how much
// of the request the cache would have served.
//
// The model is the one Anthropic documents: a request is a sequence of
// content blocks — tools, then system blocks, then each message's content
// blocks — and each block carrying cache_control (a breakpoint) writes the
// prefix ending with it to the cache. A breakpoint reads the longest
// cached prefix that ends with it or with one of the 20 blocks before it;
// the request is served from the cache up to the longest such read. The
// cache is shared by every request sent through it, as a provider's is
// shared by an organisation's requests. Minimum cacheable lengths and
// expiry are left out: tests run in seconds and count tokens themselves.
//
// It is imported only by tests.
package promptcache
