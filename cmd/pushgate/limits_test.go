package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pushgate/pushgate/limits"
)

func TestLimitFlagsDefaultsAndValidation(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.limits != limits.Default() {
		t.Errorf("limits = %+v, want the default limits", c.limits)
	}
	srv := c.server.apply(&http.Server{})
	if srv.MaxHeaderBytes != 1<<20 || srv.ReadHeaderTimeout != 30*time.Second || srv.ReadTimeout != 5*time.Minute ||
		srv.WriteTimeout != 5*time.Minute || srv.IdleTimeout != 5*time.Minute {
		t.Errorf("server limits = %+v", c.server)
	}
	for _, bad := range []string{"--push.max-series=-1", "--store.max-groups=-5", "--web.read-timeout=-1s"} {
		if _, err := parseFlags([]string{bad}); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("%s: err = %v, want a refusal", bad, err)
		}
	}
	c, err = parseFlags([]string{"--push.max-series=0", "--store.max-series=7"})
	if err != nil || c.limits.MaxSeriesPerPush != 0 || c.limits.MaxSeries != 7 {
		t.Errorf("explicit values: %+v, %v", c.limits, err)
	}
}
