package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	otelGoJobOnce sync.Once
	otelGoJobPath string
	otelGoJobErr  error
)

// otelGoJob returns the OpenTelemetry Go SDK batch job (e2e/otelsdk/job,
// protobuf over OTLP/HTTP), built on first use from its own module, so that
// the gateway's go.mod does not carry the SDK. A build that fails (the
// SDK's modules not downloadable) skips the test loudly, or fails it in CI.
func otelGoJob(t *testing.T) otelJob {
	t.Helper()
	otelGoJobOnce.Do(func() {
		otelGoJobPath = filepath.Join(buildDir, "otel-go-job")
		cmd := exec.Command("go", "build", "-o", otelGoJobPath, "./job")
		cmd.Dir = filepath.Join(moduleRoot, "e2e", "otelsdk")
		if out, err := cmd.CombinedOutput(); err != nil {
			otelGoJobErr = fmt.Errorf("go build ./job in e2e/otelsdk: %w\n%s", err, out)
		}
	})
	if otelGoJobErr != nil {
		missingDependency(t, fmt.Sprintf("the OpenTelemetry Go SDK job (%v)", otelGoJobErr))
	}
	return otelJob{
		name: "go",
		exec: func(ctx context.Context, o otlpRunOptions) ([]byte, error) {
			args := []string{"-run", fmt.Sprint(o.run), "-temporality", o.temporality,
				"-service.name", o.service, "-service.namespace", otlpNamespace,
				"-timeout", otlpJobTimeout.String()}
			if o.periodic {
				args = append(args, "-interval", "100ms", "-spread", "80ms")
			}
			cmd := exec.CommandContext(ctx, otelGoJobPath, args...)
			cmd.Env = append(append(os.Environ(), o.env...), "OTEL_EXPORTER_OTLP_ENDPOINT="+o.endpoint)
			return cmd.CombinedOutput()
		},
	}
}

// TestOTLPSDKGoBatchJobs runs a batch job instrumented with the
// OpenTelemetry Go SDK (otlpmetrichttp, protobuf), three runs each with a
// cumulative and with a delta counter, through every SDK scenario of
// runOTLPSDKScenarios.
func TestOTLPSDKGoBatchJobs(t *testing.T) {
	runOTLPSDKScenarios(t, []otelJob{otelGoJob(t)})
}
