package cluster

import (
	"context"
	"time"
)

// firstRetry is the first pause after a failed follow or campaign. Most
// failures are brief: etcd answers "no leader" while its members elect one
// (about a second), and the next attempt should go as soon as they have.
// With a fixed 500 ms pause, a replica whose watch failed during etcd's
// election lost up to half a second before it followed again, and its
// campaign waits for its follower: in the kill of etcd's leader member
// together with the leading replica (etcd 3.4), the next replica led 0.5 s
// after etcd's new leader answered.
const firstRetry = 50 * time.Millisecond

// backoff paces the retries of one loop: firstRetry, then twice as long
// each time, up to max; reset starts over after a success.
type backoff struct {
	max, next time.Duration
}

// newBackoff returns a backoff whose pauses grow to max.
func newBackoff(max time.Duration) *backoff {
	return &backoff{max: max, next: min(firstRetry, max)}
}

// wait pauses for the next pause, or until ctx ends; it reports whether
// ctx is still live.
func (b *backoff) wait(ctx context.Context) bool {
	d := b.next
	b.next = min(2*b.next, b.max)
	return sleep(ctx, d)
}

// reset starts the pauses over.
func (b *backoff) reset() { b.next = min(firstRetry, b.max) }
