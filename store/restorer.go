package store

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupkey"
)

// Restorer loads records into a store as Restore does, record for record,
// but decodes them on several goroutines: rebuilding a group from its
// bytes (decoding, hashing its series, building its time families) is
// most of a load's work, and needs no lock. The groups are installed in
// the order they were handed over, by one goroutine, so that the outcome is
// Restore's. Hand records over from one
// goroutine, then call Close, which waits until all are installed.
type Restorer struct {
	s *Store
	// work feeds the decoders; ordered holds the same jobs in order for
	// the installer.
	work    chan *restoreJob
	ordered chan *restoreJob
	decoded sync.WaitGroup
	done    chan struct{} // closed when the installer finished

	mu  sync.Mutex
	err error // the first record that failed to decode
}

// restoreJob is one record on its way into the store.
type restoreJob struct {
	key      string
	value    []byte
	group    groupkey.Key
	g        *Group
	prepared []admission.Family
	err      error         // the record cannot be decoded: the load fails
	skip     error         // the group cannot be rebuilt: it is skipped
	ready    chan struct{} // closed once decoded
}

// NewRestorer starts a Restorer with workers decoding goroutines (0: one
// per CPU the runtime uses).
func (s *Store) NewRestorer(workers int) *Restorer {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	r := &Restorer{
		s:       s,
		work:    make(chan *restoreJob, 4*workers),
		ordered: make(chan *restoreJob, 64*workers),
		done:    make(chan struct{}),
	}
	for range workers {
		r.decoded.Go(r.decode)
	}
	go r.install()
	return r
}

// Restore hands one record (as Store.Restore takes it) over. It returns
// the error of an earlier record that could not be decoded, after which
// the load is lost: stop, and Close.
func (r *Restorer) Restore(key string, value []byte) error {
	if err := r.firstErr(); err != nil {
		return err
	}
	j := &restoreJob{key: key, value: value, ready: make(chan struct{})}
	r.ordered <- j
	r.work <- j
	return nil
}

// Close waits until every record handed over is installed (or skipped) and
// returns the first decoding error. The Restorer must not be used after.
func (r *Restorer) Close() error {
	close(r.work)
	close(r.ordered)
	r.decoded.Wait()
	<-r.done
	return r.firstErr()
}

// decode rebuilds the groups of the jobs it receives.
func (r *Restorer) decode() {
	for j := range r.work {
		rec, err := groupcodec.Decode(j.value)
		if err != nil {
			j.err = fmt.Errorf("restore group %q: %w", j.key, err)
		} else {
			j.group = recordKey(&rec)
			// No group held is looked up: a load fills an empty
			// store, and the groups before this record in the load
			// may not be installed yet.
			j.g, j.prepared, j.skip = r.s.storedGroup(j.group, &rec, nil)
		}
		close(j.ready)
	}
}

// install installs the decoded groups in order, as Restore would.
func (r *Restorer) install() {
	defer close(r.done)
	for j := range r.ordered {
		<-j.ready
		switch {
		case r.firstErr() != nil:
			// The load is lost: drain.
		case j.err != nil:
			r.mu.Lock()
			r.err = j.err
			r.mu.Unlock()
		default:
			if j.skip != nil {
				r.s.logger.Warn("stored group skipped", "group", j.group.String(), "err", j.skip)
				continue
			}
			r.s.mu.Lock()
			r.s.applyLocked(0, j.group.ID(), j.g, j.prepared)
			r.s.mu.Unlock()
		}
	}
}

// firstErr returns the first decoding error, if any.
func (r *Restorer) firstErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
