package store

import (
	"sync"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/render"
)

// renderState is what pushes and scrapes share about rendering
// (render.State: the text encoding pushes render for, the one last
// scraped), and the buffers pushes encode into.
type renderState struct {
	render.State
	// scratches holds *scratch for pushes: growing fresh buffers to the
	// text bodies' size in every push was 18 KB and 27 allocations of a
	// 31 KB push (BenchmarkPush text).
	scratches sync.Pool
}

// scratch returns reusable push buffers; give them back with putScratch.
func (rs *renderState) scratch() *scratch {
	if sc, ok := rs.scratches.Get().(*scratch); ok {
		return sc
	}
	return &scratch{}
}

// putScratch returns push buffers for reuse, unless one grew past
// render.MaxScratch.
func (rs *renderState) putScratch(sc *scratch) {
	sc.check.Reset()
	sc.reset()
	if cap(sc.body) > render.MaxScratch || cap(sc.packed) > render.MaxScratch || cap(sc.old) > render.MaxScratch || cap(sc.replaced) > render.MaxScratch ||
		cap(sc.records) > render.MaxScratch || cap(sc.digest) > render.MaxScratch ||
		cap(sc.oldText) > render.MaxScratch || cap(sc.newText) > render.MaxScratch ||
		cap(sc.skeleton) > render.MaxScratch || cap(sc.area) > render.MaxScratch ||
		cap(sc.vals) > render.MaxScratch/8 || sc.text.Oversized() {
		return
	}
	rs.scratches.Put(sc)
}

// encoding returns the encoding pushes render text bodies in.
func (rs *renderState) encoding() exposition.Encoding { return rs.Encoding() }
