//go:build race

package testpar

// Race says the binary was built with -race.
const Race = true
