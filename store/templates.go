package store

import (
	"runtime"
	"sync"
	"sync/atomic"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
)

// templateBudget bounds the bytes the templates of a store's groups hold
// (exposition.TextTemplate.Size: about a text body each). Groups of one
// job push one shape and share one template; a gateway whose every group
// pushes a shape of its own builds one per group, and past this budget
// its new shapes are pushed the whole way. 32 MiB is 5,000 templates of
// the 7.6 KB bench payload.
const templateBudget = 32 << 20

// recentTemplates is how many templates a store matches a body against
// before it builds one.
const recentTemplates = 8

// templates finds the template of a pushed text body among those pushes
// built last, or builds it, within templateBudget.
type templates struct {
	mu     sync.Mutex
	recent [recentTemplates]*exposition.TextTemplate
	// live is the size of the templates built and not yet collected.
	live atomic.Int64
	// reused counts the pushes applied from a template.
	reused atomic.Uint64
	// sharedSkeletons counts the families those pushes wrote as a value
	// area beside the last push's skeleton, shared (repushFamily).
	sharedSkeletons atomic.Uint64
}

// find returns the template of d, a text body accepted as prepared (the
// families as the store keeps them, in its order), or nil. A template one
// of the last pushes used is matched rather than built. Building one
// overwrites the families' values.
func (t *templates) find(d *exposition.Decoded, prepared []admission.Family, sc *scratch) *exposition.TextTemplate {
	body := d.Text()
	if body == nil {
		return nil
	}
	t.mu.Lock()
	recent := t.recent
	t.mu.Unlock()
	for i, tmpl := range recent {
		if tmpl == nil {
			break
		}
		var ok bool
		if sc.vals, ok = tmpl.Match(body, sc.vals[:0]); ok && tmpl.Families() == len(prepared) {
			if i > 0 {
				t.promote(tmpl)
			}
			return tmpl
		}
	}
	if t.live.Load() > templateBudget {
		return nil
	}
	fams := make([]*dto.MetricFamily, len(prepared))
	for i, pf := range prepared {
		fams[i] = pf.MF
	}
	tmpl, ok := exposition.BuildTextTemplate(d, fams, &sc.old)
	if !ok {
		return nil
	}
	size := int64(tmpl.Size())
	t.live.Add(size)
	runtime.AddCleanup(tmpl, func(n int64) { t.live.Add(-n) }, size)
	t.promote(tmpl)
	return tmpl
}

// promote makes tmpl the first template find matches.
func (t *templates) promote(tmpl *exposition.TextTemplate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := 0
	for i < len(t.recent)-1 && t.recent[i] != tmpl && t.recent[i] != nil {
		i++
	}
	copy(t.recent[1:i+1], t.recent[:i])
	t.recent[0] = tmpl
}

// TemplatePushes returns how many pushes were applied from their group's
// template (PushText).
func (s *Store) TemplatePushes() uint64 { return s.templates.reused.Load() }
