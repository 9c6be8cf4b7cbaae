package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// otelNodeJobs returns the OpenTelemetry JS SDK batch job (e2e/node/
// otel-job.js) with its two OTLP/HTTP exporters: JSON
// (@opentelemetry/exporter-metrics-otlp-http) and protobuf
// (@opentelemetry/exporter-metrics-otlp-proto). Without node or the npm
// modules make test-deps installs, the test is skipped loudly, or fails in
// CI.
func otelNodeJobs(t *testing.T) []otelJob {
	t.Helper()
	requireTool(t, "node")
	for _, m := range []string{"sdk-metrics", "exporter-metrics-otlp-http", "exporter-metrics-otlp-proto", "resources", "semantic-conventions"} {
		if _, err := os.Stat(filepath.Join("node", "node_modules", "@opentelemetry", m)); err != nil {
			missingDependency(t, "e2e/node/node_modules/@opentelemetry/"+m)
		}
	}
	var jobs []otelJob
	for _, protocol := range []string{"json", "proto"} {
		jobs = append(jobs, otelJob{
			name: "node-" + protocol,
			exec: func(ctx context.Context, o otlpRunOptions) ([]byte, error) {
				cmd := map[string]any{
					"run": o.run, "protocol": protocol, "temporality": o.temporality,
					"service": o.service, "namespace": otlpNamespace,
					"timeoutMillis": otlpJobTimeout.Milliseconds(),
				}
				if o.periodic {
					// The reader's timeout is its interval at most: 800ms
					// leaves a loaded machine room for one export. Pauses
					// shorter than the interval leave no window between
					// two measurements empty, so the windows exported
					// follow each other; two pauses are longer than one
					// interval, so a run exports two windows or more.
					cmd["intervalMillis"], cmd["spreadMillis"] = 800, 600
				}
				arg, err := json.Marshal(cmd)
				if err != nil {
					return nil, err
				}
				c := exec.CommandContext(ctx, "node", "otel-job.js", string(arg))
				c.Dir = "node"
				c.Env = append(append(os.Environ(), o.env...), "OTEL_EXPORTER_OTLP_ENDPOINT="+o.endpoint)
				return c.CombinedOutput()
			},
		})
	}
	return jobs
}

// TestOTLPSDKNodeBatchJobs runs a batch job instrumented with the
// OpenTelemetry JS SDK, exporting OTLP/HTTP JSON and protobuf, three runs
// each with a cumulative and with a delta counter, through every SDK
// scenario of runOTLPSDKScenarios.
func TestOTLPSDKNodeBatchJobs(t *testing.T) {
	runOTLPSDKScenarios(t, otelNodeJobs(t))
}
