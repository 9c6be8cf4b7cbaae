// Package oracle is a model-based randomized black-box test of the
// pushgate binary whose oracle is Prometheus itself: random sequences of
// pushes, deletes and admin requests, and after every few of them a scrape
// in every format and escaping, each parsed with Prometheus 3's scrape
// parsers (model/textparse) and with expfmt, checked for what Prometheus
// would reject or merge (a repeated series under Prometheus' identity, a
// family twice, a name the declared escaping does not allow, OpenMetrics
// without # EOF), compared with each other, and compared with a model of
// the accepted pushes. A failing sequence is shrunk to a minimal one.
//
// It is its own Go module so that the gateway's go.mod does not carry
// Prometheus.
//
// Environment:
//
//	ORACLE_SEED=n           first seed (default 1; "random" picks one)
//	ORACLE_SEEDS=n          seeds per gateway setup (default 4)
//	ORACLE_OPS=n            ops per sequence, checks not counted (default 50)
//	ORACLE_DURATION=d       keep running new seeds per setup until d has passed
//	ORACLE_SHRINK_TIME=d    time to shrink each violation class (default 15s; 0 disables)
//	ORACLE_SHRINK_TOTAL=d   time to shrink all classes of one setup (default 60s); classes
//	                        beyond it are reported with their seed, unshrunk
//	ORACLE_DEBUG=1          print the answer to every rejected push (to tune the generator)
//	PUSHGATE_BINARY=path    test this binary instead of building ./cmd/pushgate
package oracle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// params are the test's bounds, from the environment.
type params struct {
	seed        uint64
	seeds       int
	ops         int
	duration    time.Duration
	shrinkTime  time.Duration
	shrinkTotal time.Duration
}

// readParams reads ORACLE_* variables.
func readParams(t *testing.T) params {
	t.Helper()
	p := params{seed: 1, seeds: 4, ops: 50, shrinkTime: 15 * time.Second, shrinkTotal: 60 * time.Second}
	if s := os.Getenv("ORACLE_SEED"); s == "random" {
		p.seed = rand.Uint64() % 1_000_000_000
	} else if s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ORACLE_SEED=%q: %v", s, err)
		}
		p.seed = n
	}
	intVar := func(name string, dst *int) {
		if s := os.Getenv(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				t.Fatalf("%s=%q: not a count", name, s)
			}
			*dst = n
		}
	}
	durVar := func(name string, dst *time.Duration) {
		if s := os.Getenv(name); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("%s=%q: %v", name, s, err)
			}
			*dst = d
		}
	}
	intVar("ORACLE_SEEDS", &p.seeds)
	intVar("ORACLE_OPS", &p.ops)
	durVar("ORACLE_DURATION", &p.duration)
	durVar("ORACLE_SHRINK_TIME", &p.shrinkTime)
	durVar("ORACLE_SHRINK_TOTAL", &p.shrinkTotal)
	return p
}

// TestOracle runs random sequences against each gateway setup and reports
// every class of violation once, with its shrunk sequence.
func TestOracle(t *testing.T) {
	bin := gatewayBinary(t)
	p := readParams(t)
	t.Logf("ORACLE_SEED=%d ORACLE_SEEDS=%d ORACLE_OPS=%d ORACLE_DURATION=%v", p.seed, p.seeds, p.ops, p.duration)
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			ctx := context.Background()
			own, err := ownNames(ctx, bin, cfg)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			shrinkLeft := p.shrinkTotal
			reported := map[string]bool{}
			var total stats
			n := 0
			for i := 0; i < p.seeds || time.Since(start) < p.duration; i++ {
				seed := p.seed + uint64(i)
				ops := newGenerator(seed, own, cfg).sequence(p.ops)
				fs, st, err := runOps(ctx, bin, cfg, ops, nil)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				n++
				total.add(st)
				for _, f := range fs {
					if reported[f.class] {
						continue
					}
					reported[f.class] = true
					budget := min(p.shrinkTime, shrinkLeft)
					began := time.Now()
					t.Error(report(ctx, bin, cfg, seed, p.ops, ops[:f.at+1], f, budget))
					shrinkLeft -= time.Since(began)
				}
			}
			t.Logf("%s: %d sequences of %d ops (seeds %d–%d) in %v (%v); %d violation classes", cfg.name, n, p.ops, p.seed, p.seed+uint64(n)-1, time.Since(start).Round(time.Millisecond), total, len(reported))
		})
	}
}

// report shrinks the sequence that showed f and renders the failure
// message.
func report(ctx context.Context, bin string, cfg config, seed uint64, nops int, ops []*op, f found, shrinkTime time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION %s\n  first seen: %s\n  setup %s (flags %s), op %d of seed %d\n",
		f.class, f.violation, cfg.name, strings.Join(cfg.flags("$DIR"), " "), f.at+1, seed)
	fmt.Fprintf(&b, "  replay: cd e2e/oracle && ORACLE_SEED=%d ORACLE_SEEDS=1 ORACLE_OPS=%d go test -run 'TestOracle/%s$' .\n", seed, nops, cfg.name)
	min := ops
	v := f.violation
	if shrinkTime <= 0 {
		b.WriteString("  not shrunk (no shrink time left)\n")
		return b.String()
	}
	{
		test := replayTest(ctx, bin, cfg, ops, f.class, variantsOf(f.violation))
		res := shrink(ops, test, shrinkBudget{deadline: time.Now().Add(shrinkTime), maxTrials: 400})
		min = res.ops
		if res.v.class != "" {
			v = res.v
		}
		state := "minimal"
		if !res.complete {
			state = "shrinking stopped at its budget; not minimal"
		}
		fmt.Fprintf(&b, "  shrunk from %d to %d ops in %d trials (%s); there: %s\n", len(ops), len(min), res.trials, state, v)
	}
	b.WriteString("  steps (U is the gateway's base URL):\n")
	b.WriteString(describeOps(min))
	return b.String()
}

// journalNames are the persistence metrics, which the gateway registers
// only once its journal is open (and pushes of them must still be refused
// or kept consistent).
var journalNames = []string{
	"pushgate_journal_compactions_total", "pushgate_journal_failed", "pushgate_journal_file_bytes",
	"pushgate_journal_live_bytes", "pushgate_journal_syncs_total",
}

// ownNames returns the names of the gateway's own metric families, read
// from a fresh gateway of cfg, and the journal's.
func ownNames(ctx context.Context, bin string, cfg config) ([]string, error) {
	dir, err := os.MkdirTemp("", "pushgate-oracle-own-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	gw, err := startGateway(bin, cfg.flags(dir)...)
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	res, err := scrape(ctx, gw.url, variants[variantIndex(canonicalVariant)])
	if err != nil {
		return nil, err
	}
	if !res.usable {
		return nil, fmt.Errorf("the first scrape of an empty gateway fails: %v", res.violations)
	}
	set := map[string]bool{}
	for _, n := range journalNames {
		set[n] = true
	}
	for _, s := range res.samples {
		if !s.pushed() && s.family != "" {
			set[s.family] = true
		}
	}
	var out []string
	for n := range set {
		if model.LegacyValidation.IsValidMetricName(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
