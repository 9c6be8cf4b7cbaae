package cluster

import "time"

// Status is a replica's state, for the status page and the gateway's own
// metrics.
type Status struct {
	// Ready: the served store is current (see Replica.Ready).
	Ready bool
	// Leading: this replica takes writes.
	Leading bool
	// Applied is the log position the served store holds.
	Applied uint64
	// Current is the log's latest position, as last read.
	Current uint64
	// Rebuilds counts the stores built after the first.
	Rebuilds uint64
	// LastError is the latest failure of a load, follow or campaign, and
	// when it happened (nil and zero when none).
	LastError     error
	LastErrorTime time.Time
}

// Status returns the replica's state.
func (r *Replica) Status() Status {
	s := Status{
		Leading:  r.leading.Load(),
		Applied:  uint64(r.current.Load().Applied()),
		Rebuilds: r.rebuilds.Load(),
	}
	s.Current = max(r.logCurrent.Load(), s.Applied)
	r.mu.Lock()
	s.Ready, s.LastError, s.LastErrorTime = r.ready, r.lastErr, r.lastErrAt
	r.mu.Unlock()
	return s
}
