package cli

import (
	"context"
	"os"
	"os/signal"
)

// secondInterrupt returns a channel closed by a Ctrl-C that comes after
// ctx is done: the first Ctrl-C cancels ctx (the root command's signal
// context), the second is watched only from then on, so that it does not
// take the first. release stops the watch.
func secondInterrupt(ctx context.Context) (second <-chan struct{}, release func()) {
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		defer signal.Stop(sig)
		select {
		case <-sig:
			close(ch)
		case <-done:
		}
	}()
	return ch, func() { close(done) }
}
