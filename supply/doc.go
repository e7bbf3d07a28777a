// Package supply decides what a board worker inherits before it starts:
// the parent conversation's last whole turns (context supply, D4–D5) and
// other workers' tool-call observations picked by the agent's flow policy
// from a run-wide ledger (D7). The two are independent: supply replays
// conversation messages, flow replays tool results.
//
// It builds values and text; it does not run workers, assemble requests or
// decide where a worker's own items go (package visibility).
package supply
