package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
)

// config is one way of running the gateway.
type config struct {
	name        string
	utf8        bool
	persistence bool
}

// configs are the gateway setups every seed runs against.
var configs = []config{
	{name: "legacy-names"},
	{name: "utf8-names", utf8: true},
	{name: "utf8-names-persistence", utf8: true, persistence: true},
}

// flags returns the gateway's command line for c; dir holds the
// persistence file.
func (c config) flags(dir string) []string {
	f := []string{"--web.enable-admin-api"}
	if c.utf8 {
		f = append(f, "--push.enable-utf8-names")
	}
	if c.persistence {
		f = append(f, "--persistence.file="+filepath.Join(dir, "pushgate.journal"))
	}
	return f
}

// runner replays one op sequence against a fresh gateway.
type runner struct {
	cfg   config
	gw    *gateway
	model *gatewayModel
	// only limits the variants a check scrapes (nil: all of them); shrink
	// trials scrape only what their violation needs.
	only  map[string]bool
	stats stats
}

// stats counts what a run did, to show how much a passing run covered.
type stats struct {
	ops, accepted, rejected, checks, restarts int
}

// add adds o's counts to s.
func (s *stats) add(o stats) {
	s.ops += o.ops
	s.accepted += o.accepted
	s.rejected += o.rejected
	s.checks += o.checks
	s.restarts += o.restarts
}

func (s stats) String() string {
	return fmt.Sprintf("%d ops run: %d pushes accepted, %d rejected, %d checks, %d restarts", s.ops, s.accepted, s.rejected, s.checks, s.restarts)
}

// found is a violation and the op it was seen at.
type found struct {
	violation
	at int
}

// runOps starts a gateway for cfg, replays ops and returns the violations
// seen, first occurrence of each class only. It stops at the first
// violation after which the model no longer knows the gateway's state.
func runOps(ctx context.Context, bin string, cfg config, ops []*op, only map[string]bool) ([]found, stats, error) {
	dir, err := os.MkdirTemp("", "pushgate-oracle-run-")
	if err != nil {
		return nil, stats{}, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	gw, err := startGateway(bin, cfg.flags(dir)...)
	if err != nil {
		return nil, stats{}, err
	}
	defer gw.stop()
	r := &runner{cfg: cfg, gw: gw, model: newModel(cfg.utf8), only: only}
	var out []found
	seen := map[string]bool{}
	for i, o := range ops {
		r.stats.ops++
		vs, err := r.do(ctx, o)
		if err != nil {
			vs = append(vs, violation{class: "gateway unreachable", detail: fmt.Sprintf("%v; log: %s", err, gw.output()), diverged: true})
		}
		stop := false
		for _, v := range vs {
			stop = stop || v.diverged
			if !seen[v.class] {
				seen[v.class] = true
				out = append(out, found{v, i})
			}
		}
		if stop {
			break
		}
	}
	return out, r.stats, nil
}

// do performs one op.
func (r *runner) do(ctx context.Context, o *op) ([]violation, error) {
	switch o.kind {
	case opCheck:
		r.stats.checks++
		return r.check(ctx, o)
	case opScrape:
		return r.scrapeOne(ctx, variants[variantIndex(o.variant)])
	case opRestart:
		r.stats.restarts++
		if err := r.gw.restart(o.hard); err != nil {
			return []violation{{class: "restart failed", detail: err.Error(), diverged: true}}, nil
		}
		return nil, nil
	}
	method, path, body, header := o.request()
	resp, err := send(ctx, method, r.gw.url+path, body, header...)
	if err != nil {
		return nil, err
	}
	var vs []violation
	if resp.status >= 500 {
		vs = append(vs, violation{class: "server error", detail: fmt.Sprintf("%s %s: %d %s", method, path, resp.status, clip(resp.body, 300))})
	}
	if o.kind == opPush {
		if resp.status/100 == 2 && o.textErr != nil {
			return append(vs, violation{
				class:    "accepted a text body the reference's parser (expfmt) rejects",
				detail:   fmt.Sprintf("%s %s: %d, expfmt: %v", method, path, resp.status, o.textErr),
				diverged: true,
			}), nil
		}
		if resp.status/100 == 2 {
			r.stats.accepted++
		} else {
			r.stats.rejected++
			if os.Getenv("ORACLE_DEBUG") != "" {
				fmt.Fprintf(os.Stderr, "REJECT %d %s\n", resp.status, strings.SplitN(string(resp.body), "\n", 2)[0])
			}
		}
	}
	if o.kind == opAdminDelete && resp.status == 200 {
		v, ok := r.adminDeleted(o, resp.body)
		if !ok {
			vs = append(vs, v)
		}
		return vs, nil
	}
	r.model.apply(o, resp.status)
	return vs, nil
}

// adminDeleted compares the groups an admin delete reports deleted with
// those its selectors select in the model (several match[] are a union, as
// in Prometheus' APIs), then removes the reported ones from the model, so
// that a difference is reported here, once, and not as a diverged store.
func (r *runner) adminDeleted(o *op, body []byte) (violation, bool) {
	var answer struct {
		Data struct {
			Groups []struct {
				Labels map[string]string `json:"labels"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return violation{class: "admin API answer", detail: fmt.Sprintf("DELETE /api/v1/admin/groups: %v: %s", err, clip(body, 300)), diverged: true}, false
	}
	var got, want []string
	for _, g := range answer.Data.Groups {
		got = append(got, keyString(g.Labels))
	}
	for ks, g := range r.model.groups {
		for _, sel := range o.selectors {
			if sel.matches(g.key) {
				want = append(want, ks)
				break
			}
		}
	}
	// A group only a rejected push may have created is selected when the
	// gateway has it.
	for _, g := range answer.Data.Groups {
		ks := keyString(g.Labels)
		if _, maybe := r.model.maybe[ks]; maybe && r.model.groups[ks] == nil {
			for _, sel := range o.selectors {
				if sel.matches(g.Labels) {
					want = append(want, ks)
					break
				}
			}
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	for _, ks := range got {
		delete(r.model.groups, ks)
		delete(r.model.maybe, ks)
	}
	if strings.Join(got, " ") == strings.Join(want, " ") {
		return violation{}, true
	}
	return violation{
		class:  "admin delete removes other groups than its match[] selectors select",
		detail: fmt.Sprintf("match[]=%s deleted %v; the selectors (a union) select %v", strings.Join(o.match, " match[]="), got, want),
	}, false
}

// companions are the allow-utf-8 scrapes of each format.
var companions = map[string]string{
	"text":        "text-1.0.0-allow-utf-8",
	"openmetrics": "openmetrics-1.0.0-allow-utf-8",
	"protobuf":    canonicalVariant,
}

// scrapeOne scrapes one variant and checks the answer. When it shows a
// violation under escaped names, the same format with allow-utf-8 is
// scraped too, to tell whether escaping is what breaks it (as a check
// does).
func (r *runner) scrapeOne(ctx context.Context, v variant) ([]violation, error) {
	res, err := scrape(ctx, r.gw.url, v)
	if err != nil {
		return nil, err
	}
	vs := res.violations
	clean := map[string]bool{}
	if res.view.scheme != model.NoEscaping && len(vs) > 0 && companions[res.view.enc] != "" && companions[res.view.enc] != v.name {
		comp, err := scrape(ctx, r.gw.url, variants[variantIndex(companions[res.view.enc])])
		if err != nil {
			return nil, err
		}
		vs = append(vs, comp.violations...)
		if comp.usable && comp.view.scheme == model.NoEscaping {
			clean[comp.view.enc] = true
		}
	}
	return classify(vs, clean), nil
}

// describeOps renders a sequence as numbered curl-like steps.
func describeOps(ops []*op) string {
	var b strings.Builder
	for i, o := range ops {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, o.describe())
	}
	return b.String()
}

// variantsOf returns the variants a violation needs a check to scrape: the
// one it was seen in, and the canonical one.
func variantsOf(v violation) map[string]bool {
	m := map[string]bool{canonicalVariant: true}
	if v.variant != "" {
		m[v.variant] = true
	}
	return m
}

// classes returns the sorted classes of fs.
func classes(fs []found) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.class)
	}
	sort.Strings(out)
	return out
}
