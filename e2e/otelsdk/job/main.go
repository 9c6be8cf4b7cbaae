// Command job is a batch job instrumented with the OpenTelemetry Go SDK, as
// pushgate's end-to-end tests run it: one process per run, which records a
// known set of measurements, exports them once over OTLP/HTTP (protobuf) on
// shutdown and exits. It is configured as a real job is: the endpoint comes
// only from OTEL_EXPORTER_OTLP_ENDPOINT (the SDK appends /v1/metrics), and
// every run has its own SDK start time and a random service.instance.id,
// which it prints so that a test can look for it.
//
// Usage:
//
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9091/otlp \
//	  job -run 2 -temporality delta -service.name backup -service.namespace nightly
//
// The values recorded by run r are fixed (see record), so a test knows what
// the last run left and what the runs add up to.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// options are the job's command-line settings.
type options struct {
	run         int
	temporality string
	service     string
	namespace   string
	timeout     time.Duration
	// interval is the periodic reader's export interval, spread the pause
	// between the run's measurements: with spread > interval a run exports
	// several windows while it works, and once more at shutdown.
	interval, spread time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.run, "run", 1, "the run number, 1 or more: it scales the recorded values")
	flag.StringVar(&o.temporality, "temporality", "cumulative", "cumulative or delta (the exporter's temporality selector)")
	flag.StringVar(&o.service, "service.name", "otel-go-job", "the resource's service.name")
	flag.StringVar(&o.namespace, "service.namespace", "otel-e2e", "the resource's service.namespace")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "how long the export, retries included, may take")
	flag.DurationVar(&o.interval, "interval", time.Hour, "the periodic reader's export interval")
	flag.DurationVar(&o.spread, "spread", 0, "the pause between the run's measurements")
	flag.Parse()
	if err := runJob(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "job:", err)
		os.Exit(1)
	}
}

// runJob sets up the SDK, records run o.run's values and shuts the SDK
// down, which exports them.
func runJob(ctx context.Context, o options) error {
	if o.run < 1 {
		return fmt.Errorf("run %d: want 1 or more", o.run)
	}
	selector, err := temporalitySelector(o.temporality)
	if err != nil {
		return err
	}
	// Exports of the periodic reader's ticks report their errors here, not
	// to the caller: keep them, so that a failed window fails the run.
	var handled exportErrors
	otel.SetErrorHandler(&handled)
	instanceID := uuid.NewString()
	res, err := resource.New(ctx, resource.WithAttributes(
		attribute.String("service.name", o.service),
		attribute.String("service.namespace", o.namespace),
		attribute.String("service.instance.id", instanceID),
	))
	if err != nil {
		return fmt.Errorf("resource: %w", err)
	}
	// The cluster test kills the leader replica before the last run: the
	// exporter retries the 503s of a leaderless cluster (and honours
	// Retry-After) until a new leader takes the write.
	exporter, err := otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithTemporalitySelector(selector),
		otlpmetrichttp.WithTimeout(o.timeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{
			Enabled:         true,
			InitialInterval: 250 * time.Millisecond,
			MaxInterval:     2 * time.Second,
			MaxElapsedTime:  o.timeout,
		}),
	)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	// By default a batch job exports once, at shutdown: the interval only
	// has to be longer than the job.
	reader := sdkmetric.NewPeriodicReader(exporter, sdkmetric.WithInterval(o.interval), sdkmetric.WithTimeout(o.timeout))
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(reader),
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Name: "batch.payload.size"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}},
		)),
	)
	if err := record(ctx, provider.Meter("github.com/pushgate/pushgate/e2e/otelsdk/job"), o.run, o.spread); err != nil {
		_ = provider.Shutdown(ctx)
		return err
	}
	if o.spread > 0 {
		// Flush before shutting down, as a job that exports while it works
		// does: shutdown stops the reader's ticks by cancelling them, and
		// a tick's export in flight then would lose its window.
		if err := provider.ForceFlush(ctx); err != nil {
			handled.Handle(err)
		}
	}
	if err := provider.Shutdown(ctx); err != nil {
		handled.Handle(err)
	}
	if err := handled.failure(); err != nil {
		return fmt.Errorf("export of run %d: %w", o.run, err)
	}
	fmt.Printf("service.instance.id=%s\n", instanceID)
	return nil
}

// exportErrors keeps the errors of a run's exports.
type exportErrors struct {
	mu     sync.Mutex
	failed []error
}

// Handle keeps err unless it reports a partial success, which it prints.
// The exporter returns an accepted request's partial_success as an error,
// of a type it keeps internal; the request was taken and must not be sent
// again (OTLP/HTTP): a gateway answers so when a retried export's delta
// points were summed already. Anything else is a failed export.
func (e *exportErrors) Handle(err error) {
	if strings.Contains(err.Error(), "OTLP partial success") {
		fmt.Printf("partial_success: %v\n", err)
		return
	}
	e.mu.Lock()
	e.failed = append(e.failed, err)
	e.mu.Unlock()
}

// failure returns the failed exports' errors joined, nil when none failed.
func (e *exportErrors) failure() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.failed...)
}

// temporalitySelector returns the exporter's selector for name: delta makes
// counters and histograms delta and leaves up-down counters cumulative, as
// the specification's "delta" preference does.
func temporalitySelector(name string) (sdkmetric.TemporalitySelector, error) {
	switch name {
	case "cumulative":
		return sdkmetric.DefaultTemporalitySelector, nil
	case "delta":
		return func(k sdkmetric.InstrumentKind) metricdata.Temporality {
			switch k {
			case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindObservableCounter, sdkmetric.InstrumentKindHistogram:
				return metricdata.DeltaTemporality
			default:
				return metricdata.CumulativeTemporality
			}
		}, nil
	default:
		return nil, fmt.Errorf("temporality %q: want cumulative or delta", name)
	}
}

// record makes run r's measurements, pausing for spread between the three
// observations of each histogram (the counter is added to before the
// first, the up-down counter's decrement comes with the second, the gauge
// is set after the third). Every value is exact in binary floating point,
// so sums over runs compare exactly:
//
//	batch.items.processed  counter, {batch.queue=main}   += r
//	batch.queue.depth      up-down counter              += 10r, -= r
//	batch.progress         gauge, unit 1                = r/4
//	batch.duration         histogram, unit s, bounds 0.25, 1, 8: 0.0625, r/2, 4
//	batch.payload.size     exponential histogram, unit By: 1, 2, 4r
func record(ctx context.Context, m metric.Meter, r int, spread time.Duration) error {
	items, err := m.Int64Counter("batch.items.processed", metric.WithDescription("Items the batch job processed."))
	if err != nil {
		return fmt.Errorf("counter: %w", err)
	}
	depth, err := m.Int64UpDownCounter("batch.queue.depth", metric.WithDescription("Items left in the queue."))
	if err != nil {
		return fmt.Errorf("up-down counter: %w", err)
	}
	progress, err := m.Float64Gauge("batch.progress", metric.WithUnit("1"), metric.WithDescription("Share of the work done."))
	if err != nil {
		return fmt.Errorf("gauge: %w", err)
	}
	duration, err := m.Float64Histogram("batch.duration", metric.WithUnit("s"),
		metric.WithDescription("Time per batch step."),
		metric.WithExplicitBucketBoundaries(0.25, 1, 8))
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	size, err := m.Float64Histogram("batch.payload.size", metric.WithUnit("By"), metric.WithDescription("Payload sizes."))
	if err != nil {
		return fmt.Errorf("exponential histogram: %w", err)
	}
	rf := float64(r)
	items.Add(ctx, int64(r), metric.WithAttributes(attribute.String("batch.queue", "main")))
	depth.Add(ctx, int64(10*r))
	durations, sizes := []float64{0.0625, rf / 2, 4}, []float64{1, 2, 4 * rf}
	for i := range durations {
		if i > 0 {
			time.Sleep(spread)
		}
		if i == 1 {
			depth.Add(ctx, int64(-r))
		}
		duration.Record(ctx, durations[i])
		size.Record(ctx, sizes[i])
	}
	progress.Record(ctx, rf/4)
	return nil
}
