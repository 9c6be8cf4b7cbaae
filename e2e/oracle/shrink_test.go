package oracle

import (
	"context"
	"slices"
	"time"
)

// shrinkBudget bounds one shrink.
type shrinkBudget struct {
	deadline  time.Time
	maxTrials int
}

// shrinkResult is a minimal sequence and the violation it shows.
type shrinkResult struct {
	ops    []*op
	v      violation
	trials int
	// complete is false when the budget ran out first.
	complete bool
}

// replayTest returns a shrink test that replays a candidate against a
// fresh gateway of cfg and looks for a violation of class cls. Checks scrape
// only the variants in only, unless the violation does not show then in the
// whole sequence ops.
func replayTest(ctx context.Context, bin string, cfg config, ops []*op, cls string, only map[string]bool) func([]*op) (violation, bool) {
	test := func(cand []*op) (violation, bool) {
		fs, _, err := runOps(ctx, bin, cfg, cand, only)
		if err != nil {
			return violation{}, false
		}
		for _, f := range fs {
			if f.class == cls {
				return f.violation, true
			}
		}
		return violation{}, false
	}
	if _, ok := test(ops); !ok {
		only = nil
	}
	return test
}

// shrink reduces ops, for which test reports a violation, to a sequence
// from which no single chunk can be dropped (delta debugging on
// complements, down to single ops) while the violation persists, then
// drops what it can from the bodies: families, then metrics.
func shrink(ops []*op, test func([]*op) (violation, bool), b shrinkBudget) shrinkResult {
	res := shrinkResult{ops: ops}
	counted := test
	test = func(cand []*op) (violation, bool) {
		res.trials++
		return counted(cand)
	}
	v, ok := test(ops)
	if !ok {
		// Not reproducible on a fresh gateway: report the sequence as is.
		return res
	}
	res.v = v
	exhausted := func() bool { return res.trials >= b.maxTrials || time.Now().After(b.deadline) }
	// try replaces op i by c when the violation persists.
	var i int
	try := func(c *op) bool {
		cand := slices.Clone(res.ops)
		cand[i] = c
		if v, ok := test(cand); ok {
			res.ops, res.v = cand, v
			return true
		}
		return false
	}
	n := 2
	for len(res.ops) >= 2 {
		if exhausted() {
			return res
		}
		chunk := (len(res.ops) + n - 1) / n
		reduced := false
		for start := 0; start < len(res.ops) && !exhausted(); start += chunk {
			end := min(start+chunk, len(res.ops))
			cand := append(append([]*op{}, res.ops[:start]...), res.ops[end:]...)
			if v, ok := test(cand); ok {
				res.ops, res.v = cand, v
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if n >= len(res.ops) {
				break
			}
			n = min(2*n, len(res.ops))
		}
	}
	// Then inside the bodies: drop families, then metrics, one at a time.
	for i = len(res.ops) - 1; i >= 0; i-- {
		if res.ops[i].kind != opPush {
			continue
		}
		for f := res.ops[i].parts() - 1; f >= 0; f-- {
			if exhausted() {
				return res
			}
			if res.ops[i].parts() > 1 && try(res.ops[i].withoutFamily(f)) {
				continue
			}
			for m := res.ops[i].metrics(f) - 1; m >= 0 && !exhausted(); m-- {
				if c := res.ops[i].withoutMetric(f, m); c != nil {
					try(c)
				}
			}
		}
	}
	res.complete = !exhausted()
	return res
}
