package filejournal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path (created if needed) so
// that two processes never append to the same journal. The kernel releases
// it when the process dies, so a crash leaves no stale lock behind.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("journal lock %s: another process uses this journal", path)
		}
		return nil, fmt.Errorf("journal lock %s: %w", path, err)
	}
	return f, nil
}
