package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// secondInterrupt returns a channel closed by a Ctrl-C that comes after
// ctx is done, or by a SIGTERM at any time: the first Ctrl-C cancels ctx
// (the root command's signal context), the second is watched only from
// then on, so that it does not take the first; a SIGTERM (a service
// manager, kubectl delete) both cancels ctx and closes the channel, so
// that the run stops at once, without the grace a first Ctrl-C gives.
// release stops the watch.
func secondInterrupt(ctx context.Context) (second <-chan struct{}, release func()) {
	ch := make(chan struct{})
	done := make(chan struct{})
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		defer signal.Stop(term)
		select {
		case <-ctx.Done():
		case <-term:
			close(ch)
			return
		case <-done:
			return
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		defer signal.Stop(sig)
		select {
		case <-sig:
			close(ch)
		case <-term:
			close(ch)
		case <-done:
		}
	}()
	return ch, func() { close(done) }
}
