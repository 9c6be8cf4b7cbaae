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
			exec: func(ctx context.Context, endpoint string, r int, temporality, service string, env []string) ([]byte, error) {
				arg, err := json.Marshal(map[string]any{
					"run": r, "protocol": protocol, "temporality": temporality,
					"service": service, "namespace": otlpNamespace,
					"timeoutMillis": otlpJobTimeout.Milliseconds(),
				})
				if err != nil {
					return nil, err
				}
				cmd := exec.CommandContext(ctx, "node", "otel-job.js", string(arg))
				cmd.Dir = "node"
				cmd.Env = append(append(os.Environ(), env...), "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint)
				return cmd.CombinedOutput()
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
