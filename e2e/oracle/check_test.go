package oracle

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// violation is one broken promise.
type violation struct {
	// check, hint and enc are set for violations of one scrape: the check
	// that failed, what the failure looks like, and the format; escaped
	// says the scrape asked for escaped names. classify turns them into
	// the class.
	check, hint, enc string
	escaped          bool
	// class names the kind of violation coarsely enough that one defect is
	// one class (it is what shrinking preserves and what reports are
	// deduplicated by).
	class string
	// variant is the scrape variant it was seen in ("" for none).
	variant string
	// detail says exactly what was seen.
	detail string
	// diverged marks a violation after which the model no longer knows the
	// gateway's state: the sequence stops there.
	diverged bool
}

func (v violation) String() string {
	s := v.class + ": " + v.detail
	if v.variant != "" {
		s += " [scrape " + v.variant + "]"
	}
	return s
}

// timeNames are the families the gateway keeps per group.
var timeNames = map[string]bool{"push_time_seconds": true, "push_failure_time_seconds": true}

// check scrapes the variants in o's order (only those in only, when set)
// and checks each answer, the formats against each other, and the
// canonical answer against the model.
func (r *runner) check(ctx context.Context, o *op) ([]violation, error) {
	results := map[string]*scrapeResult{}
	var out []violation
	for _, i := range o.order {
		v := variants[i]
		if r.only != nil && !r.only[v.name] {
			continue
		}
		res, err := scrape(ctx, r.gw.url, v)
		if err != nil {
			return out, err
		}
		results[v.name] = res
		out = append(out, res.violations...)
	}
	// The formats whose allow-utf-8 scrapes parsed: a violation seen only
	// in escaped scrapes of such a format is one of escaping.
	cleanUTF8 := map[string]bool{}
	for _, res := range results {
		if res.usable && res.view.scheme == model.NoEscaping {
			cleanUTF8[res.view.enc] = true
		}
	}
	out = classify(out, cleanUTF8)
	canon := results[canonicalVariant]
	if canon == nil || !canon.usable {
		return append(out, violation{class: "canonical scrape unusable", detail: "the protobuf allow-utf-8 scrape did not parse; nothing compared", diverged: true}), nil
	}
	out = append(out, r.compareModel(ctx, canon)...)
	fams, err := decodeProtobuf(canon.body, canon.header)
	if err != nil {
		return out, nil // reported by the scrape's own checks
	}
	fams = pushedFamilies(fams)
	var disagree []violation
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		res := results[n]
		if res == canon || !res.usable {
			continue
		}
		diffs, err := diffView(fams, res)
		if err != nil {
			out = append(out, violation{class: "oracle error", variant: n, detail: err.Error()})
			continue
		}
		if len(diffs) > 0 {
			disagree = append(disagree, violation{
				check:   "formats disagree",
				enc:     res.view.enc,
				escaped: res.view.scheme != model.NoEscaping,
				variant: n,
				detail:  fmt.Sprintf("%s, as %s, differs (%s) from the protobuf allow-utf-8 scrape: %s", res.header, res.view, diffKind(diffs), strings.Join(diffs, "; ")),
			})
		}
	}
	return append(out, classify(disagree, cleanUTF8)...), nil
}

// perFormat lists the checks whose failures in one format say little about
// another, so that their class names the format.
var perFormat = map[string]bool{
	"Prometheus 3 parser (textparse)": true,
	"expfmt parser":                   true,
	"OpenMetrics # EOF":               true,
	"formats disagree":                true,
}

// classify gives scrape violations their class and keeps the first of
// each: the check and its hint, the format for checks in perFormat, and
// "when escaped" when every scrape that showed it asked for escaped names
// while a scrape of the same format with allow-utf-8 was checked without
// showing it (cleanUTF8 holds the formats of those checked scrapes). Other
// violations pass unchanged.
func classify(vs []violation, cleanUTF8 map[string]bool) []violation {
	type agg struct {
		first    violation
		unescape bool
		// checked: an allow-utf-8 scrape of a format that showed it
		// was checked.
		checked bool
	}
	byKey := map[string]*agg{}
	var order []string
	var out []violation
	for _, v := range vs {
		if v.check == "" {
			out = append(out, v)
			continue
		}
		key := v.check
		if v.hint != "" {
			key += " (" + v.hint + ")"
		}
		if perFormat[v.check] && v.enc != "" {
			key += " in " + v.enc
		}
		a := byKey[key]
		if a == nil {
			a = &agg{first: v}
			byKey[key] = a
			order = append(order, key)
		}
		a.unescape = a.unescape || !v.escaped
		a.checked = a.checked || cleanUTF8[v.enc]
	}
	for _, key := range order {
		a := byKey[key]
		v := a.first
		v.class = key
		if !a.unescape && a.checked {
			v.class += " when escaped"
		}
		out = append(out, v)
	}
	return out
}

// diffView compares a scrape's pushed samples with what fams look like in
// its view. OpenMetrics may keep the text format's sample names or use its
// own (X_total, _gcount): either is accepted when it holds for the whole
// scrape.
func diffView(fams []*dto.MetricFamily, res *scrapeResult) ([]string, error) {
	want, err := expectedSamples(fams, res.view, false)
	if err != nil {
		return nil, err
	}
	diffs := diffSamples(want, res.pushedSamples(), 6)
	if len(diffs) == 0 || res.view.enc != "openmetrics" {
		return diffs, nil
	}
	want, err = expectedSamples(fams, res.view, true)
	if err != nil {
		return nil, err
	}
	if len(diffSamples(want, res.pushedSamples(), 6)) == 0 {
		return nil, nil
	}
	return diffs, nil
}

// pushedFamilies keeps the series with a job label, the pushed ones.
func pushedFamilies(fams []*dto.MetricFamily) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for _, mf := range fams {
		var ms []*dto.Metric
		for _, m := range mf.Metric {
			for _, lp := range m.Label {
				if lp.GetName() == "job" && lp.GetValue() != "" {
					ms = append(ms, m)
					break
				}
			}
		}
		if len(ms) > 0 {
			c := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit, Metric: ms}
			out = append(out, c)
		}
	}
	return out
}

// compareModel checks the canonical scrape against the model: the pushed
// series and values, then each group's push_time_seconds and
// push_failure_time_seconds. It updates the model with the times seen.
func (r *runner) compareModel(ctx context.Context, canon *scrapeResult) []violation {
	var out []violation
	var data []sample
	pushTimes, failTimes := map[string][]float64{}, map[string][]float64{}
	for _, s := range canon.pushedSamples() {
		switch s.ls.Get(model.MetricNameLabel) {
		case "push_time_seconds":
			id := keyString(labelsOf(s.ls))
			pushTimes[id] = append(pushTimes[id], s.v)
		case "push_failure_time_seconds":
			id := keyString(labelsOf(s.ls))
			failTimes[id] = append(failTimes[id], s.v)
		default:
			data = append(data, s)
		}
	}
	m := r.model
	want, err := expectedSamples(m.families(), canon.view, false)
	if err != nil {
		return []violation{{class: "oracle error", detail: err.Error(), diverged: true}}
	}
	if diffs := diffSamples(want, data, 8); len(diffs) > 0 {
		out = append(out, violation{
			class:    "pushed series differ from the accepted pushes (" + diffKind(diffs) + ")",
			detail:   strings.Join(diffs, "; "),
			diverged: true,
		})
	}

	// Groups, by the labels of their push_time_seconds series (empty
	// values included, so that {job="a"} and {a="",job="a"} stay apart; a
	// group with both the same identity is a repeated series, reported as
	// such). A rejected push may have created an absent group with only a
	// failure time; adopt those the scrape shows. Keys of one identity that
	// differ only in instance="" render alike, and whether a rejection
	// reached the store (and created its group) depends on why it was
	// refused, so the exact key is asked of the gateway's group page.
	byID := map[string][]*modelGroup{}
	for _, g := range m.groups {
		id := renderedKey(g.key)
		byID[id] = append(byID[id], g)
	}
	maybeKeys := make([]string, 0, len(m.maybe))
	for ks := range m.maybe {
		maybeKeys = append(maybeKeys, ks)
	}
	sort.Strings(maybeKeys) // a replay asks the same questions in the same order
	for _, ks := range maybeKeys {
		key := m.maybe[ks]
		if m.groups[ks] != nil {
			continue
		}
		id := renderedKey(key)
		if len(pushTimes[id]) > len(byID[id]) && r.groupExists(ctx, key) {
			g := &modelGroup{key: key, fams: map[string]*dto.MetricFamily{}, failureOnly: true, failMayChange: true}
			m.groups[ks] = g
			byID[id] = append(byID[id], g)
		}
	}
	m.maybe = map[string]map[string]string{}

	ids := map[string]bool{}
	for id := range byID {
		ids[id] = true
	}
	for id := range pushTimes {
		ids[id] = true
	}
	for id := range failTimes {
		ids[id] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	for _, id := range sorted {
		gs := byID[id]
		if len(pushTimes[id]) != len(gs) || len(failTimes[id]) != len(gs) {
			var keys []string
			for _, g := range gs {
				keys = append(keys, keyString(g.key))
			}
			out = append(out, violation{
				class:    "groups differ from the accepted pushes",
				detail:   fmt.Sprintf("push_time_seconds%s appears %d times and push_failure_time_seconds %d times; the accepted requests leave %d groups with those labels %v", id, len(pushTimes[id]), len(failTimes[id]), len(gs), keys),
				diverged: true,
			})
			continue
		}
		if len(gs) != 1 {
			continue // reported as a repeated series
		}
		if v, ok := checkTimes(gs[0], pushTimes[id][0], failTimes[id][0]); !ok {
			out = append(out, v)
		}
	}
	for _, g := range m.groups {
		g.pushChanged, g.failMayChange = false, false
	}
	return out
}

// renderedKey is the label set of a group's push_time_seconds series:
// its grouping key, with instance="" when it has no instance label.
func renderedKey(key map[string]string) string {
	if _, ok := key["instance"]; ok {
		return keyString(key)
	}
	k := make(map[string]string, len(key)+1)
	for n, v := range key {
		k[n] = v
	}
	k["instance"] = ""
	return keyString(k)
}

// checkTimes checks a group's observed timestamps against what happened
// since they were last seen, and records them.
func checkTimes(g *modelGroup, push, fail float64) (violation, bool) {
	defer func() {
		g.pushTime, g.pushKnown = push, true
		g.failTime, g.failKnown = fail, true
	}()
	key := keyString(g.key)
	switch {
	case g.failureOnly && push != 0:
		return violation{class: "push_time_seconds wrong", detail: fmt.Sprintf("group %s was only ever rejected, but push_time_seconds is %v", key, push)}, false
	case !g.failureOnly && g.pushChanged && (push <= 0 || (g.pushKnown && push < g.pushTime)):
		return violation{class: "push_time_seconds wrong", detail: fmt.Sprintf("group %s: push_time_seconds %v after an accepted push (was %v)", key, push, g.pushTime)}, false
	case !g.pushChanged && g.pushKnown && push != g.pushTime:
		return violation{class: "push_time_seconds changed without an accepted push", detail: fmt.Sprintf("group %s: push_time_seconds %v, was %v", key, push, g.pushTime)}, false
	case g.failMayChange && g.failKnown && fail < g.failTime:
		return violation{class: "push_failure_time_seconds wrong", detail: fmt.Sprintf("group %s: push_failure_time_seconds went back from %v to %v", key, g.failTime, fail)}, false
	case g.failureOnly && fail <= 0:
		return violation{class: "push_failure_time_seconds wrong", detail: fmt.Sprintf("group %s was created by a rejected push, but push_failure_time_seconds is %v", key, fail)}, false
	case !g.failMayChange && g.failKnown && fail != g.failTime:
		return violation{class: "push_failure_time_seconds changed without a rejected push", detail: fmt.Sprintf("group %s: push_failure_time_seconds %v, was %v", key, fail, g.failTime)}, false
	}
	return violation{}, true
}

// groupExists reports whether the gateway holds a group under exactly key,
// by its group page (/group?key= takes the key's canonical ID, names and
// values separated by 0xFF, in unpadded URL base64). When the page cannot
// be fetched it answers true, and the check compares what the scrape shows.
func (r *runner) groupExists(ctx context.Context, key map[string]string) bool {
	names := make([]string, 0, len(key))
	for n := range key {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, 2*len(names))
	for _, n := range names {
		parts = append(parts, n, key[n])
	}
	id := base64.RawURLEncoding.EncodeToString([]byte(strings.Join(parts, "\xff")))
	resp, err := send(ctx, "GET", r.gw.url+"/group?key="+id, nil)
	if err != nil {
		return true
	}
	return resp.status != http.StatusNotFound
}
