package main

import (
	"log/slog"
	"os"

	"github.com/pushgate/pushgate/access"
)

// reloadOnHangup handles the SIGHUPs delivered on hup until the returned
// function is called: it reloads the permission file when there is one, and
// otherwise logs that there is nothing to reload. SIGHUP never ends the
// process: Debian's unit file sends it on `systemctl reload`. A failed
// reload is logged by Reload and keeps the previous policy.
func reloadOnHangup(hup <-chan os.Signal, permissions *access.PolicyFile, logger *slog.Logger) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-hup:
				if permissions == nil {
					logger.Info("received SIGHUP: nothing to reload (no --web.permissions-file)")
					continue
				}
				logger.Info("received SIGHUP: reloading the permission file")
				_ = permissions.Reload()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
