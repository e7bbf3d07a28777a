package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are the signals that interrupt a run: each cancels it,
// kills its tools' process groups and lets the record be written, and the
// run can be resumed. A second signal is not caught: it ends fsd at once
// (its tools die with it, see package tool).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalCause is the cause of a run's context when a signal stopped it.
type signalCause struct{ sig os.Signal }

func (s signalCause) Error() string { return "received " + signalName(s.sig) }

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// exitCode is the shell's code for a process ended by sig: 128 + its
// number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
func signalExit(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitProblems
}

// withSignals returns ctx cancelled, with a signalCause, by the first stop
// signal; stop releases the handler.
//
// R1: a signal cancels the run, which still writes its record.
func withSignals(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			// Back to the default action: a second signal kills fsd.
			signal.Stop(ch)
			cancel(signalCause{s})
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		signal.Stop(ch)
		cancel(nil)
	}
}

// caughtSignal is the signal that stopped a run, if one did.
func caughtSignal(ctx context.Context) (os.Signal, bool) {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		return sc.sig, true
	}
	return nil, false
}
