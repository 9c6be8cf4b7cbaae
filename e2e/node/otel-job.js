'use strict';
// otel-job.js is a batch job instrumented with the OpenTelemetry JS SDK, as
// pushgate's end-to-end tests run it: one process per run, which records a
// known set of measurements, exports them once over OTLP/HTTP on shutdown and
// exits. The endpoint comes only from OTEL_EXPORTER_OTLP_ENDPOINT (the
// exporter appends /v1/metrics), as a real job is configured; every run has
// its own SDK start time and a random service.instance.id, which it prints.
//
// Usage: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9091/otlp node otel-job.js '<json>'
// where the JSON object holds
//   run:           the run number, 1 or more (it scales the recorded values)
//   protocol:      "json" (@opentelemetry/exporter-metrics-otlp-http) or
//                  "proto" (@opentelemetry/exporter-metrics-otlp-proto)
//   temporality:   "cumulative" or "delta" (the exporter's preference: delta
//                  makes counters and histograms delta, up-down counters stay
//                  cumulative)
//   service:       the resource's service.name
//   namespace:     the resource's service.namespace
//   timeoutMillis: how long the export, retries included, may take
//                  (optional, 60000)
//   intervalMillis: the periodic reader's export interval (optional; by
//                  default the job exports once, at shutdown)
//   spreadMillis:  the pause between the run's measurements (optional, 0):
//                  with spreadMillis > intervalMillis a run exports several
//                  windows while it works, and once more at shutdown
// It exits 0 when the export succeeded and 1, printing the error, otherwise.
//
// Run r records (every value exact in binary floating point, so sums over
// runs compare exactly):
//   batch.items.processed  counter, {batch.queue=main}   += r
//   batch.queue.depth      up-down counter              += 10r, -= r
//   batch.progress         observable gauge, unit 1     = r/4
//   batch.duration         histogram, unit s, bounds 0.25, 1, 8: 0.0625, r/2, 4
//   batch.payload.size     exponential histogram, unit By: 1, 2, 4r
// pausing for spreadMillis between the three observations of each histogram
// (the counter is added to before the first, the up-down counter's
// decrement comes with the second, the gauge is observed at collection).
const { randomUUID } = require('crypto');
const { diag, DiagLogLevel } = require('@opentelemetry/api');
const { setGlobalErrorHandler } = require('@opentelemetry/core');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const {
  AggregationType,
  MeterProvider,
  PeriodicExportingMetricReader,
} = require('@opentelemetry/sdk-metrics');
const {
  ATTR_SERVICE_INSTANCE_ID,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_NAMESPACE,
} = require('@opentelemetry/semantic-conventions');
const { AggregationTemporalityPreference } = require('@opentelemetry/exporter-metrics-otlp-http');

// exporterFor returns the OTLP exporter of protocol with the temporality
// preference asked for.
function exporterFor(cmd) {
  const temporalityPreference = {
    cumulative: AggregationTemporalityPreference.CUMULATIVE,
    delta: AggregationTemporalityPreference.DELTA,
  }[cmd.temporality];
  if (temporalityPreference === undefined) {
    throw new Error(`temporality ${JSON.stringify(cmd.temporality)}: want cumulative or delta`);
  }
  // The exporter retries 429, 502, 503 and 504 (honouring Retry-After)
  // within timeoutMillis: the cluster test kills the leader replica before
  // the last run.
  const options = { temporalityPreference, timeoutMillis: cmd.timeoutMillis || 60000 };
  switch (cmd.protocol) {
    case 'json':
      return new (require('@opentelemetry/exporter-metrics-otlp-http').OTLPMetricExporter)(options);
    case 'proto':
      return new (require('@opentelemetry/exporter-metrics-otlp-proto').OTLPMetricExporter)(options);
    default:
      throw new Error(`protocol ${JSON.stringify(cmd.protocol)}: want json or proto`);
  }
}

// record makes run r's measurements with meter.
async function record(meter, r, spreadMillis) {
  const items = meter.createCounter('batch.items.processed', {
    description: 'Items the batch job processed.',
  });
  const depth = meter.createUpDownCounter('batch.queue.depth', {
    description: 'Items left in the queue.',
  });
  const progress = meter.createObservableGauge('batch.progress', {
    unit: '1',
    description: 'Share of the work done.',
  });
  const duration = meter.createHistogram('batch.duration', {
    unit: 's',
    description: 'Time per batch step.',
    advice: { explicitBucketBoundaries: [0.25, 1, 8] },
  });
  const size = meter.createHistogram('batch.payload.size', {
    unit: 'By',
    description: 'Payload sizes.',
  });
  items.add(r, { 'batch.queue': 'main' });
  depth.add(10 * r);
  progress.addCallback(result => result.observe(r / 4));
  const durations = [0.0625, r / 2, 4];
  const sizes = [1, 2, 4 * r];
  for (let i = 0; i < durations.length; i++) {
    if (i > 0 && spreadMillis > 0) {
      await new Promise(resolve => setTimeout(resolve, spreadMillis));
    }
    if (i === 1) {
      depth.add(-r);
    }
    duration.record(durations[i]);
    size.record(sizes[i]);
  }
}

async function main() {
  const cmd = JSON.parse(process.argv[2]);
  if (!Number.isInteger(cmd.run) || cmd.run < 1) {
    throw new Error(`run ${JSON.stringify(cmd.run)}: want an integer, 1 or more`);
  }
  // The reader reports a failed export to the global error handler, not to
  // the caller of shutdown: keep the errors so that the job can fail.
  const errors = [];
  setGlobalErrorHandler(err => errors.push(err));
  // A periodic export that times out is only logged, as an error.
  diag.setLogger(
    {
      error: (...args) => errors.push(args.join(' ')),
      warn: (...args) => process.stderr.write(`warn: ${args.join(' ')}\n`),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    DiagLogLevel.WARN,
  );

  const instanceID = randomUUID();
  const provider = new MeterProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: cmd.service,
      [ATTR_SERVICE_NAMESPACE]: cmd.namespace,
      [ATTR_SERVICE_INSTANCE_ID]: instanceID,
    }),
    views: [
      {
        instrumentName: 'batch.payload.size',
        aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM, options: { maxSize: 160 } },
      },
    ],
    readers: [
      // By default a batch job exports once, at shutdown: the interval
      // only has to be longer than the job. The reader wants its timeout
      // no longer than its interval.
      new PeriodicExportingMetricReader({
        exporter: exporterFor(cmd),
        exportIntervalMillis: cmd.intervalMillis || 3600000,
        exportTimeoutMillis: Math.min(cmd.timeoutMillis || 60000, cmd.intervalMillis || 3600000),
      }),
    ],
  });
  await record(provider.getMeter('pushgate-e2e-otel-job'), cmd.run, cmd.spreadMillis || 0);
  await provider.shutdown();
  if (errors.length > 0) {
    throw new Error(`export of run ${cmd.run} failed: ${errors.map(e => (e && e.message) || e).join('; ')}`);
  }
  process.stdout.write(`service.instance.id=${instanceID}\n`);
}

main().catch(err => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
