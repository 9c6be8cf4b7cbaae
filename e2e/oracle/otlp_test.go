package oracle

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// otlpDefaultDuration bounds TestOTLPOracle's run per setup unless
// ORACLE_OTLP_DURATION says otherwise.
const otlpDefaultDuration = 7 * time.Second

// otlpStats counts what an OTLP run compared.
type otlpStats struct {
	sequences, requests, points, compared, checks, jobless, restarts int
}

func (s otlpStats) String() string {
	return fmt.Sprintf("%d sequences, %d requests with %d points, %d restarts, %d scrapes checked, %d series comparisons, %d points of resources without service.name refused as expected",
		s.sequences, s.requests, s.points, s.restarts, s.checks, s.compared, s.jobless)
}

// otlpFailure is the first difference of a sequence: at which request,
// what, and the request itself.
type otlpFailure struct {
	at      int
	class   string
	detail  string
	request pmetric.Metrics
	wire    otlpWire
}

// otlpWire is how a request is sent: the path, protobuf or OTLP JSON, and
// gzip or not; whether the gateway is killed (-9) and started again
// before; whether it repeats the request before it, as a client's retry.
type otlpWire struct {
	path              string
	json, gzip        bool
	killBefore, retry bool
}

// otlpProtobuf is the wire of an SDK pointed at the gateway's /otlp.
var otlpProtobuf = otlpWire{path: "/otlp/v1/metrics"}

// encode returns the body and headers of md sent as w says.
func (w otlpWire) encode(md pmetric.Metrics) ([]byte, []string, error) {
	req := pmetricotlp.NewExportRequestFromMetrics(md)
	body, err := req.MarshalProto()
	header := []string{"Content-Type", "application/x-protobuf"}
	if w.json {
		body, err = req.MarshalJSON()
		header = []string{"Content-Type", "application/json; charset=utf-8"}
	}
	if err != nil {
		return nil, nil, err
	}
	if w.gzip {
		body = gzipBytes(body)
		header = append(header, "Content-Encoding", "gzip")
	}
	return body, header, nil
}

func (w otlpWire) String() string {
	s := "protobuf"
	if w.json {
		s = "JSON"
	}
	if w.gzip {
		s += ", gzip"
	}
	if w.retry {
		s += ", the previous request again"
	}
	if w.killBefore {
		s = "after kill -9 and a restart, " + s
	}
	return "POST " + w.path + " (" + s + ")"
}

// TestOTLPOracle sends random OTLP requests (dotted names with units,
// attributes that collide once sanitised, every point kind including
// exponential histograms at scales -4 to 12 and deltas, exemplars, NaN and
// ±Inf, NoRecordedValue points, resources and scopes without anything,
// retries) to the gateway's /otlp/v1/metrics or /api/v1/otlp/v1/metrics,
// as protobuf or JSON, gzipped or not, killing and restarting a gateway
// with a journal now and then; it translates each in-process with
// Prometheus' own translator (storage/remote/otlptranslator/
// prometheusremotewrite of v0.316.0, with deltas summed per series as
// otlp-deltatocumulative does for one process), and after every request
// requires the gateway's protobuf scrape, parsed by Prometheus 3, to hold
// exactly the model's series, values and exemplars for every group the
// sequence touched, the answer's partial_success to refuse exactly what
// the gateway documents refusing, and every scrape to pass the module's
// validity checks.
//
// ORACLE_SEED picks the first seed; ORACLE_OPS the requests per sequence
// (default 50); ORACLE_OTLP_DURATION how long each setup runs new seeds
// (default 7s; at least ORACLE_SEEDS sequences run when that is set).
func TestOTLPOracle(t *testing.T) {
	bin := gatewayBinary(t)
	p := readParams(t)
	duration := otlpDefaultDuration
	if s := os.Getenv("ORACLE_OTLP_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("ORACLE_OTLP_DURATION=%q: %v", s, err)
		}
		duration = d
	}
	minSeeds := 1
	if os.Getenv("ORACLE_SEEDS") != "" {
		minSeeds = p.seeds
	}
	for _, setup := range otlpSetups {
		t.Run(setup.name, func(t *testing.T) {
			ctx := context.Background()
			began := time.Now()
			var total otlpStats
			reported := map[string]bool{}
			for i := 0; i < minSeeds || time.Since(began) < duration; i++ {
				seed := p.seed + uint64(i)
				f, st, err := runOTLP(ctx, bin, setup, seed, p.ops)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				total.add(st)
				if f != nil && !reported[f.class] {
					reported[f.class] = true
					t.Error(otlpReport(ctx, bin, setup, seed, p.ops, f))
				}
			}
			t.Logf("%s: seeds %d–%d in %v: %v; %d difference classes", setup.name, p.seed, p.seed+uint64(total.sequences)-1, time.Since(began).Round(time.Millisecond), total, len(reported))
		})
	}
}

// add adds o's counts to s.
func (s *otlpStats) add(o otlpStats) {
	s.sequences += o.sequences
	s.requests += o.requests
	s.points += o.points
	s.compared += o.compared
	s.checks += o.checks
	s.jobless += o.jobless
	s.restarts += o.restarts
}

// runOTLP replays seed's sequence of n requests against a fresh gateway
// and returns its first difference.
func runOTLP(ctx context.Context, bin string, setup otlpSetup, seed uint64, n int) (*otlpFailure, otlpStats, error) {
	gen := newOTLPGen(seed, time.Now().Add(-time.Hour).Truncate(time.Second), setup.utf8)
	reqs := make([]pmetric.Metrics, n)
	wires := make([]otlpWire, n)
	for i := range reqs {
		wires[i] = gen.wire(setup.persistence)
		if i > 0 && gen.rng.IntN(10) == 0 {
			// A client's retry: the same request again.
			reqs[i], wires[i].retry = reqs[i-1], true
			continue
		}
		reqs[i], _ = gen.request()
	}
	return replayOTLP(ctx, bin, setup, reqs, wires)
}

// replayOTLP sends reqs, each as its wire says, to a fresh gateway of
// setup, checking after each.
func replayOTLP(ctx context.Context, bin string, setup otlpSetup, reqs []pmetric.Metrics, wires []otlpWire) (*otlpFailure, otlpStats, error) {
	st := otlpStats{sequences: 1}
	dir, err := os.MkdirTemp("", "pushgate-oracle-otlp-")
	if err != nil {
		return nil, st, err
	}
	defer os.RemoveAll(dir)
	gw, err := startGateway(bin, setup.flags(dir)...)
	if err != nil {
		return nil, st, err
	}
	defer gw.stop()
	m := newOTLPModel(setup)
	for i, md := range reqs {
		st.requests++
		st.points += totalPoints(md)
		wire := wires[i]
		fail := func(class, format string, args ...any) (*otlpFailure, otlpStats, error) {
			return &otlpFailure{at: i, class: class, detail: fmt.Sprintf(format, args...), request: md, wire: wire}, st, nil
		}
		if wire.killBefore {
			st.restarts++
			if err := gw.restart(true); err != nil {
				return fail("the gateway does not start again after kill -9", "%v", err)
			}
		}
		cum, delta, err := setup.translate(ctx, md)
		if err != nil {
			return fail("Prometheus' translator refuses a generated request", "%v", err)
		}
		body, header, err := wire.encode(md)
		if err != nil {
			return nil, st, fmt.Errorf("encode request %d: %w", i+1, err)
		}
		resp, err := send(ctx, "POST", gw.url+wire.path, body, header...)
		if err != nil {
			return fail("gateway unreachable", "%v; log: %s", err, gw.output())
		}
		jobless := joblessPoints(md)
		if resp.status == 400 && jobless > 0 && jobless == totalPoints(md) {
			// Every point is refused, so the request is refused as a
			// whole; it changes nothing.
			st.jobless += jobless
			continue
		}
		if resp.status != 200 {
			return fail(fmt.Sprintf("the gateway answers %d to a request Prometheus' translator accepts", resp.status), "%s", clip(resp.body, 400))
		}
		er := pmetricotlp.NewExportResponse()
		unmarshal := er.UnmarshalProto
		if wire.json {
			unmarshal = er.UnmarshalJSON
		}
		if err := unmarshal(resp.body); err != nil {
			return fail("the gateway's answer is not an ExportMetricsServiceResponse", "%v: %q", err, clip(resp.body, 200))
		}
		// A resource without service.name has no job for a group key: the
		// gateway refuses its points in partial_success (a documented
		// difference; Prometheus stores them without a job label).
		// A retried request's delta points cover windows already summed:
		// the gateway reports them refused and adds nothing (Prometheus'
		// delta-to-cumulative conversion drops them too).
		refused := jobless
		if wire.retry {
			refused += deltaPoints(md)
			delta = nil
		}
		st.jobless += jobless
		if ps := er.PartialSuccess(); ps.RejectedDataPoints() != int64(refused) {
			return fail("the gateway refuses other points than those of resources without service.name and retried deltas",
				"%d points refused, %d expected: %s", ps.RejectedDataPoints(), refused, ps.ErrorMessage())
		}
		m.apply(cum, delta)

		// The canonical scrape (protobuf, names as stored, native
		// histograms) is compared; it and Prometheus 3's own default
		// scrape pass every check of one answer.
		var canon *scrapeResult
		for _, vn := range []string{canonicalVariant, "prometheus-3"} {
			res, err := scrape(ctx, gw.url, variants[variantIndex(vn)])
			if err != nil {
				return fail("gateway unreachable", "%v; log: %s", err, gw.output())
			}
			st.checks++
			if len(res.violations) > 0 {
				return fail("a scrape after an OTLP request fails a validity check: "+res.violations[0].check, "%v", res.violations[0])
			}
			if vn == canonicalVariant {
				canon = res
			}
		}
		want := m.series()
		got, err := m.scrapedSeries(canon)
		if err != nil {
			return fail("Prometheus 3's parser cannot read the exemplars of a scrape", "%v", err)
		}
		st.compared += len(want)
		if kind, d := otlpDiff(want, got); d != "" {
			return fail("the gateway's series differ from Prometheus' translation: "+kind, "%s", d)
		}
	}
	return nil, st, nil
}

// otlpDiff lists the series whose values or exemplars differ, and those
// only one side has ("" when none), and names the kind of the first of
// them, so that different defects are different classes.
func otlpDiff(want, got map[string]string) (kind, diff string) {
	var lines []string
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			lines = append(lines, "missing  "+id+" "+w)
		case g != w && strings.SplitN(g, " # ", 2)[0] == strings.SplitN(w, " # ", 2)[0]:
			lines = append(lines, "exemplar "+id+" = "+g+", Prometheus "+w)
		case g != w:
			lines = append(lines, "value    "+id+" = "+g+", Prometheus "+w)
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			lines = append(lines, "extra    "+id+" "+g)
		}
	}
	if len(lines) == 0 {
		return "", ""
	}
	sort.Strings(lines)
	kind = map[string]string{"missing": "a series missing", "extra": "a series too many", "exemplar": "exemplars", "value": "a value"}[strings.Fields(lines[0])[0]]
	if len(lines) > 12 {
		lines = append(lines[:12], fmt.Sprintf("… and %d more", len(lines)-12))
	}
	return kind, strings.Join(lines, "\n    ")
}

// otlpReport renders a difference: the seed to replay it, the request
// that showed it (as OTLP JSON, as curl would send it), and a shrunk
// request when one request on a fresh gateway shows the same class.
func otlpReport(ctx context.Context, bin string, setup otlpSetup, seed uint64, n int, f *otlpFailure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "DIFFERENCE %s\n  setup %s (flags %s), request %d of seed %d, %v\n    %s\n",
		f.class, setup.name, strings.Join(setup.flags("$DIR"), " "), f.at+1, seed, f.wire, f.detail)
	fmt.Fprintf(&b, "  replay: cd e2e/oracle && ORACLE_SEED=%d ORACLE_SEEDS=1 ORACLE_OPS=%d ORACLE_OTLP_DURATION=0 go test -run 'TestOTLPOracle/%s$' .\n", seed, n, setup.name)
	req := f.request
	if small, sf, ok := shrinkOTLP(ctx, bin, setup, f); ok {
		req = small
		fmt.Fprintf(&b, "  one request on a fresh gateway shows it, shrunk to:\n    %s\n", sf.detail)
	} else {
		b.WriteString("  (needs the requests before it; the failing request as sent:)\n")
	}
	js, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(req)
	fmt.Fprintf(&b, "  curl -H 'Content-Type: application/json' --data-binary '%s' U/otlp/v1/metrics\n", js)
	return b.String()
}

// joblessPoints counts the points of md's resources without service.name.
func joblessPoints(md pmetric.Metrics) int { return countPoints(md, true) }

// totalPoints counts md's points.
func totalPoints(md pmetric.Metrics) int { return countPoints(md, false) }

// deltaPoints counts the delta points of md's resources with service.name.
func deltaPoints(md pmetric.Metrics) int {
	n := 0
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		if _, ok := rm.Resource().Attributes().Get("service.name"); !ok {
			continue
		}
		for j := range rm.ScopeMetrics().Len() {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := range ms.Len() {
				if isDelta(ms.At(k)) {
					n += pointCount(ms.At(k))
				}
			}
		}
	}
	return n
}

// countPoints counts the points of md's resources, only of those without
// service.name when jobless.
func countPoints(md pmetric.Metrics, jobless bool) int {
	n := 0
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		if _, ok := rm.Resource().Attributes().Get("service.name"); ok && jobless {
			continue
		}
		for j := range rm.ScopeMetrics().Len() {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := range ms.Len() {
				n += pointCount(ms.At(k))
			}
		}
	}
	return n
}
