package e2e

import (
	"context"
	"regexp"
	"testing"
	"time"
)

// The OTLP SDK tests run real OpenTelemetry SDKs (Go in e2e/otelsdk, Node in
// e2e/node) as batch jobs: every run is a new process with its own SDK start
// time and a random service.instance.id, configured only by
// OTEL_EXPORTER_OTLP_ENDPOINT=<gateway>/otlp. Each job is run once with a
// cumulative and once with a delta counter (variants), three runs each.
// The values each run records are fixed (see otlpRunValues), so the tests
// know what the last run left and what the delta runs add up to.

// otlpNamespace is every job's service.namespace: the job label is
// "otel-e2e/<service.name>".
const otlpNamespace = "otel-e2e"

// otlpJobTimeout bounds one run, its export retries included (the cluster
// test's last run waits for a new leader).
const otlpJobTimeout = 90 * time.Second

// otelJob is one SDK batch job.
type otelJob struct {
	// name is the job's part of service.name ("go", "node-json", ...).
	name string
	// exec runs one run of the job as a new process and returns its
	// output.
	exec func(ctx context.Context, o otlpRunOptions) ([]byte, error)
}

// otlpRunOptions say how to run a job once.
type otlpRunOptions struct {
	// endpoint is the value of OTEL_EXPORTER_OTLP_ENDPOINT.
	endpoint string
	// run is the run number, temporality "cumulative" or "delta" and
	// service the resource's service.name.
	run                  int
	temporality, service string
	// env (NAME=value) is added to the process environment.
	env []string
	// periodic makes the run export on a short interval while it works,
	// with pauses (shorter than the interval) between its measurements, so
	// that one run exports adjacent windows, each starting where the one
	// before ended, and once more at shutdown.
	periodic bool
}

// otlpVariant is a job with one temporality for its counter and histograms.
type otlpVariant struct {
	job         otelJob
	temporality string
}

// otlpVariants returns every job in both temporalities.
func otlpVariants(jobs []otelJob) []otlpVariant {
	var vs []otlpVariant
	for _, j := range jobs {
		for _, temporality := range []string{"cumulative", "delta"} {
			vs = append(vs, otlpVariant{job: j, temporality: temporality})
		}
	}
	return vs
}

// service is the variant's service.name.
func (v otlpVariant) service() string { return v.job.name + "-" + v.temporality }

// jobLabel is the job label the gateway derives from the resource.
func (v otlpVariant) jobLabel() string { return otlpNamespace + "/" + v.service() }

var instanceIDPattern = regexp.MustCompile(`service\.instance\.id=([0-9a-f-]{36})`)

// run runs run r of the variant as a new process against the gateway at
// baseURL, with env added to its environment, and returns the
// service.instance.id the process chose.
func (v otlpVariant) run(t *testing.T, baseURL string, r int, env ...string) string {
	t.Helper()
	return v.runWith(t, baseURL, otlpRunOptions{run: r, env: env})
}

// try runs the variant once as runWith does and returns the process output
// and its error, for runs that must fail.
func (v otlpVariant) try(baseURL string, o otlpRunOptions) ([]byte, error) {
	o.temporality, o.service = v.temporality, v.service()
	if o.endpoint == "" {
		o.endpoint = baseURL + "/otlp"
	}
	ctx, cancel := context.WithTimeout(context.Background(), otlpJobTimeout+30*time.Second)
	defer cancel()
	return v.job.exec(ctx, o)
}

// runWith is run with more options; o's temporality and service are the
// variant's, its endpoint baseURL/otlp unless o names one.
func (v otlpVariant) runWith(t *testing.T, baseURL string, o otlpRunOptions) string {
	t.Helper()
	r := o.run
	out, err := v.try(baseURL, o)
	if err != nil {
		t.Fatalf("%s run %d against %s: %v\n%s", v.service(), r, baseURL, err, out)
	}
	m := instanceIDPattern.FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s run %d printed no service.instance.id:\n%s", v.service(), r, out)
	}
	return string(m[1])
}

// otlpExpect is what a variant's group must hold after some runs.
type otlpExpect struct {
	// items is batch_items_processed_total{batch_queue="main"}.
	items float64
	// depth is batch_queue_depth, progress batch_progress_ratio.
	depth, progress float64
	// durBuckets are batch_duration_seconds' cumulative counts at le 0.25,
	// 1 and 8; durCount and durSum its count and sum.
	durBuckets         [3]float64
	durCount, durSum   float64
	sizeCount, sizeSum float64
}

// otlpRunValues is what run r records (the jobs' documentation lists the
// same): the counter adds r, the up-down counter 9r, the gauge is r/4, the
// histogram observes 0.0625, r/2 and 4 (bounds 0.25, 1, 8), the exponential
// histogram 1, 2 and 4r. Every value is exact in binary floating point.
func otlpRunValues(r int) otlpExpect {
	rf := float64(r)
	e := otlpExpect{
		items: rf, depth: 9 * rf, progress: rf / 4,
		durCount: 3, durSum: 4.0625 + rf/2,
		sizeCount: 3, sizeSum: 3 + 4*rf,
	}
	// 0.0625 ≤ 0.25; r/2 ≤ 1 for runs 1 and 2; 4 ≤ 8.
	e.durBuckets = [3]float64{1, 1, 3}
	if rf/2 <= 1 {
		e.durBuckets[1] = 2
	}
	return e
}

// otlpExpectAfter is what a variant's group holds after runs 1..n: the last
// run's values for cumulative instruments, the sum over the runs for delta
// ones (the counter and both histograms of the delta variant).
func otlpExpectAfter(temporality string, n int) otlpExpect {
	last := otlpRunValues(n)
	if temporality != "delta" {
		return last
	}
	sum := last
	sum.items, sum.durCount, sum.durSum, sum.sizeCount, sum.sizeSum = 0, 0, 0, 0, 0
	sum.durBuckets = [3]float64{}
	for r := 1; r <= n; r++ {
		v := otlpRunValues(r)
		sum.items += v.items
		sum.durCount += v.durCount
		sum.durSum += v.durSum
		sum.sizeCount += v.sizeCount
		sum.sizeSum += v.sizeSum
		for i := range sum.durBuckets {
			sum.durBuckets[i] += v.durBuckets[i]
		}
	}
	return sum
}
