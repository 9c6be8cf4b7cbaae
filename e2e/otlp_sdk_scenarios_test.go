package e2e

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runOTLPSDKScenarios runs the SDK scenarios of issue 23 for jobs: three
// runs seen by Prometheus 3, a kill -9 between runs 2 and 3, a leader
// replica killed between runs 2 and 3 (and the answer to run 3's export
// lost, so that the SDK retries it), and a captured request replayed with
// curl.
func runOTLPSDKScenarios(t *testing.T, jobs []otelJob) {
	variants := otlpVariants(jobs)
	t.Run("three runs leave one group per job with the last values and the summed deltas, as Prometheus 3 scrapes it", func(t *testing.T) {
		testOTLPSDKThreeRuns(t, prometheus3Binary(t), variants)
	})
	t.Run("a kill -9 between runs 2 and 3 loses none of the summed deltas", func(t *testing.T) {
		testOTLPSDKKilled(t, prometheus3Binary(t), variants)
	})
	t.Run("the leader replica killed between runs 2 and 3, then run 3's answer lost and retried by the SDK: every replica holds the summed deltas", func(t *testing.T) {
		testOTLPSDKLeaderKilled(t, variants)
	})
	t.Run("a captured export replayed twice with curl changes nothing and names the overlap", func(t *testing.T) {
		testOTLPSDKReplay(t, variants)
	})
	t.Run("a job exporting while it works: its adjacent windows all add up, none taken for a retry", func(t *testing.T) {
		testOTLPSDKPeriodic(t, variants)
	})
	t.Run("a DELETE of the group resets the summed deltas", func(t *testing.T) {
		testOTLPSDKDelete(t, variants)
	})
	t.Run("a job that names its group in OTEL_EXPORTER_OTLP_METRICS_ENDPOINT lands in that group", func(t *testing.T) {
		testOTLPSDKGroupingPath(t, variants)
	})
	t.Run("a job configured for Prometheus' receiver (<gateway>/api/v1/otlp) is taken alike", func(t *testing.T) {
		testOTLPSDKPrometheusPath(t, variants)
	})
	t.Run("a job sending credentials in OTEL_EXPORTER_OTLP_HEADERS writes the groups they allow and no other", func(t *testing.T) {
		testOTLPSDKCredentials(t, variants)
	})
}

// testOTLPSDKThreeRuns runs every variant three times, with exemplars on,
// against one gateway that Prometheus 3 scrapes with native histograms on,
// and checks the groups in a protobuf scrape, in /api/v1/metrics and
// through Prometheus' query API, and the created timestamps each run left.
func testOTLPSDKThreeRuns(t *testing.T, bin string, variants []otlpVariant) {
	g := startGateway(t)
	p := otlpPrometheus(t, bin, g)
	ids := map[string][]string{}
	created := map[string][]map[string]time.Time{}
	for r := 1; r <= 3; r++ {
		for _, v := range variants {
			// Every measurement an exemplar, where the SDK supports the
			// setting (the Go SDK does): they travel to Prometheus'
			// protobuf scrape, which must stay healthy.
			ids[v.service()] = append(ids[v.service()], v.run(t, g.URL, r, "OTEL_METRICS_EXEMPLAR_FILTER=always_on"))
			ct, err := v.createdTimestamps(g.URL)
			if err != nil {
				t.Fatalf("%s after run %d: %v", v.service(), r, err)
			}
			created[v.service()] = append(created[v.service()], ct)
		}
	}
	for _, v := range variants {
		e := otlpExpectAfter(v.temporality, 3)
		v.requireScrape(t, g.URL, e, ids[v.service()])
		v.requirePrometheus(t, p, e)
		v.requireCreatedTimestamps(t, created[v.service()])
	}
	p.requireTargetHealthy(t)
}

// testOTLPSDKKilled runs every variant twice against a gateway with a
// persistence file, kills it with SIGKILL, restarts it on the same file,
// replays each run 2's request with curl and runs every variant a third
// time.
func testOTLPSDKKilled(t *testing.T, bin string, variants []otlpVariant) {
	curlBin := requireTool(t, "curl")
	g := startGateway(t, "--persistence.file="+filepath.Join(t.TempDir(), "pushgate.journal"))
	p := otlpPrometheus(t, bin, g)
	// The restarted gateway listens where the killed one did: the
	// recorder in front of it keeps its target.
	rec := startOTLPRecorder(t, g.URL)
	ids := map[string][]string{}
	run2 := map[string]otlpExchange{}
	for r := 1; r <= 2; r++ {
		for _, v := range variants {
			ids[v.service()] = append(ids[v.service()], v.run(t, rec.URL, r))
			run2[v.service()] = lastExchange(t, rec)
		}
	}
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9 the gateway: %v", err)
	}
	if _, ok := g.wait(30 * time.Second); !ok {
		t.Fatal("the gateway did not die of SIGKILL within 30s")
	}
	g = g.restart(t)
	for _, v := range variants {
		e := otlpExpectAfter(v.temporality, 2)
		v.requireScrape(t, g.URL, e, ids[v.service()])
		// The windows summed before the kill are known after it: run 2's
		// request, sent again, adds nothing.
		v.replay(t, curlBin, g.URL, run2[v.service()])
		v.requireScrape(t, g.URL, e, ids[v.service()])
		ids[v.service()] = append(ids[v.service()], v.run(t, g.URL, 3))
	}
	for _, v := range variants {
		e := otlpExpectAfter(v.temporality, 3)
		v.requireScrape(t, g.URL, e, ids[v.service()])
		v.requirePrometheus(t, p, e)
	}
}

// testOTLPSDKLeaderKilled runs every variant twice through the leader of
// three replicas on a three-member etcd, kills the leader with SIGKILL,
// replays each run 2's request through a survivor with curl, runs every
// variant a third time through the survivor, whose first answer to each
// run is lost on its way back, and checks every live replica.
func testOTLPSDKLeaderKilled(t *testing.T, variants []otlpVariant) {
	members := startEtcd(t, etcdServers(t)["3.7"], 3)
	rs := startReplicas(t, members, 3, fmt.Sprintf("--cluster.lease-ttl=%s", clusterLeaseTTL))
	curlBin := requireTool(t, "curl")
	leader := leaderOf(t, rs, waitTimeout)
	toLeader := startOTLPRecorder(t, leader.URL)
	ids := map[string][]string{}
	run2 := map[string]otlpExchange{}
	for r := 1; r <= 2; r++ {
		for _, v := range variants {
			ids[v.service()] = append(ids[v.service()], v.run(t, toLeader.URL, r))
			run2[v.service()] = lastExchange(t, toLeader)
		}
	}
	converge(t, rs)
	killedAt := time.Now()
	leader.kill(t)
	// The first replay starts at once, while the cluster may have no
	// leader yet: the survivor waits for one, or answers 503, which curl
	// is made to retry. The windows the dead leader summed are known to
	// the new one: run 2's request, sent again, adds nothing.
	survivor := live(rs)[0]
	for i, v := range variants {
		v.replayUntilLeader(t, curlBin, survivor.URL, run2[v.service()])
		if i == 0 {
			t.Logf("the first replay through %s was answered %s after the leader replica was killed", survivor.Addr, time.Since(killedAt).Round(time.Millisecond))
		}
	}
	// A recorder in front of the survivor loses the answer to each run 3's
	// first export (a 503 with Retry-After after the gateway took it), so
	// that every SDK retries, with its own retry settings, a request the
	// gateway has already summed: the retry must add nothing.
	rec := startOTLPRecorder(t, survivor.URL)
	for _, v := range variants {
		rec.loseNext(1)
		ids[v.service()] = append(ids[v.service()], v.run(t, rec.URL, 3))
		exchanges := rec.take()
		var statuses []string
		for _, x := range exchanges {
			s := fmt.Sprint(x.status)
			if x.lost {
				s += " (lost)"
			}
			statuses = append(statuses, s)
		}
		last := exchanges[len(exchanges)-1]
		if len(exchanges) < 2 || last.lost {
			t.Fatalf("%s run 3: exports answered %v; the SDK did not retry the lost answer", v.service(), statuses)
		}
		if !bytes.Equal(last.body, exchanges[0].body) {
			t.Fatalf("%s run 3: the retry's body differs from the first export's\nfirst: %s\nretry: %s", v.service(), exchanges[0].describeRequest(), last.describeRequest())
		}
		if exchanges[0].status == http.StatusOK {
			// The gateway took the first export: the retry's delta points
			// overlap windows already summed.
			if err := last.requireAccepted(v.deltaPoints()); err != nil {
				t.Fatalf("%s run 3, the SDK's retry of an export the gateway took: %v\nrequest: %s", v.service(), err, last.describeRequest())
			}
		}
	}
	converge(t, rs)
	for _, r := range live(rs) {
		for _, v := range variants {
			v.requireScrape(t, r.URL, otlpExpectAfter(v.temporality, 3), ids[v.service()])
		}
	}
}

// testOTLPSDKReplay runs every variant twice through a recording proxy and
// POSTs the second run's request, byte for byte, twice more with curl.
func testOTLPSDKReplay(t *testing.T, variants []otlpVariant) {
	curlBin := requireTool(t, "curl")
	g := startGateway(t)
	rec := startOTLPRecorder(t, g.URL)
	for _, v := range variants {
		// The delta variants compress their exports, as
		// OTEL_EXPORTER_OTLP_COMPRESSION=gzip makes every SDK do: the
		// replay then sends gzip too.
		var env []string
		if v.temporality == "delta" {
			env = append(env, "OTEL_EXPORTER_OTLP_COMPRESSION=gzip")
		}
		var ids []string
		for r := 1; r <= 2; r++ {
			ids = append(ids, v.run(t, rec.URL, r, env...))
		}
		exchanges := rec.take()
		if len(exchanges) != 2 {
			t.Fatalf("%s: %d requests recorded for 2 runs, want 2", v.service(), len(exchanges))
		}
		for i, x := range exchanges {
			if wantGzip := len(env) > 0; wantGzip != (x.contentEncoding == "gzip") {
				t.Fatalf("%s run %d: Content-Encoding %q with %v in the environment", v.service(), i+1, x.contentEncoding, env)
			}
			if err := x.requireAccepted(0); err != nil {
				t.Fatalf("%s run %d, as the SDK sent it: %v\nrequest: %s", v.service(), i+1, err, x.describeRequest())
			}
		}
		e := otlpExpectAfter(v.temporality, 2)
		v.requireScrape(t, g.URL, e, ids)
		before, err := scrapeProtobuf(g.url("/metrics"))
		if err != nil {
			t.Fatal(err)
		}
		last := exchanges[1]
		for range 2 {
			v.replay(t, curlBin, g.URL, last)
		}
		v.requireScrape(t, g.URL, e, ids)
		after, err := scrapeProtobuf(g.url("/metrics"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"batch_items_processed_total", "batch_queue_depth", "batch_progress_ratio", "batch_duration_seconds", "batch_payload_size_bytes"} {
			b, a := jobSeries(before[name], v.jobLabel()), jobSeries(after[name], v.jobLabel())
			if b != a {
				t.Fatalf("%s: %s changed by the replays:\nbefore %s\nafter  %s\nrequest: %s", v.service(), name, b, a, last.describeRequest())
			}
		}
	}
}

// testOTLPSDKPeriodic runs every variant three times with exports on a
// short interval while the run works, through a recording proxy.
func testOTLPSDKPeriodic(t *testing.T, variants []otlpVariant) {
	g := startGateway(t)
	rec := startOTLPRecorder(t, g.URL)
	for _, v := range variants {
		var ids []string
		for r := 1; r <= 3; r++ {
			ids = append(ids, v.runWith(t, rec.URL, otlpRunOptions{run: r, periodic: true}))
			exchanges := rec.take()
			if len(exchanges) < 2 {
				t.Fatalf("%s run %d sent %d exports, want one per interval and one at shutdown, 2 or more", v.service(), r, len(exchanges))
			}
			// A window that starts where the last one ended does not
			// overlap it: nothing is refused.
			for i, x := range exchanges {
				if err := x.requireAccepted(0); err != nil {
					t.Fatalf("%s run %d, export %d of %d: %v\nrequest: %s", v.service(), r, i+1, len(exchanges), err, x.describeRequest())
				}
			}
		}
		v.requireScrape(t, g.URL, otlpExpectAfter(v.temporality, 3), ids)
	}
}

// testOTLPSDKDelete runs every variant twice, DELETEs its group and runs
// it once more.
func testOTLPSDKDelete(t *testing.T, variants []otlpVariant) {
	g := startGateway(t)
	for _, v := range variants {
		var ids []string
		for r := 1; r <= 2; r++ {
			ids = append(ids, v.run(t, g.URL, r))
		}
		v.requireScrape(t, g.URL, otlpExpectAfter(v.temporality, 2), ids)
		// The job label holds a '/': the path carries it in base64url.
		path := "/metrics/job@base64/" + base64.RawURLEncoding.EncodeToString([]byte(v.jobLabel()))
		mustStatus(t, http.StatusAccepted, http.MethodDelete, g.url(path), nil)
		eventually(t, waitTimeout, func() error {
			if err := v.checkScrape(g.URL, otlpExpectAfter(v.temporality, 2), nil); err == nil {
				return errorf("group %s still served after its DELETE", v.jobLabel())
			}
			return nil
		})
		// Run 3 alone: nothing of runs 1 and 2 is added to it.
		v.requireScrape(t, g.URL, otlpRunValues(3), append(ids, v.run(t, g.URL, 3)))
	}
}

// testOTLPSDKGroupingPath runs every variant three times with
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT naming a group (job, with a '/' in
// base64, and instance) on the grouping path.
func testOTLPSDKGroupingPath(t *testing.T, variants []otlpVariant) {
	g := startGateway(t)
	for _, v := range variants {
		// The signal's own endpoint is used as it is: no /v1/metrics added.
		key := lbl("job", "batch/"+v.service(), "instance", "db-1")
		endpoint := "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=" + g.URL + "/otlp/job@base64/" +
			base64.RawURLEncoding.EncodeToString([]byte(key["job"])) + "/instance/" + key["instance"] + "/v1/metrics"
		var ids []string
		for r := 1; r <= 3; r++ {
			ids = append(ids, v.run(t, g.URL, r, endpoint))
		}
		e := otlpExpectAfter(v.temporality, 3)
		eventually(t, waitTimeout, func() error { return checkOTLPGroup(g.URL, key, e, ids) })
		if err := v.checkScrape(g.URL, e, nil); err == nil || !strings.Contains(err.Error(), "series []") {
			t.Fatalf("the resource's job %s has a group too (%v), though the URL named the group", v.jobLabel(), err)
		}
	}
}

// testOTLPSDKPrometheusPath runs every variant three times with
// OTEL_EXPORTER_OTLP_ENDPOINT=<gateway>/api/v1/otlp, the setting that sends
// a job's metrics to Prometheus' own OTLP receiver.
func testOTLPSDKPrometheusPath(t *testing.T, variants []otlpVariant) {
	g := startGateway(t)
	for _, v := range variants {
		var ids []string
		for r := 1; r <= 3; r++ {
			ids = append(ids, v.runWith(t, g.URL, otlpRunOptions{run: r, endpoint: g.URL + "/api/v1/otlp"}))
		}
		v.requireScrape(t, g.URL, otlpExpectAfter(v.temporality, 3), ids)
	}
}

// testOTLPSDKCredentials starts a gateway with a permissions file whose
// credential may push the cumulative variants' jobs only, and runs every
// variant with that credential in OTEL_EXPORTER_OTLP_HEADERS (the SDKs'
// way to send an Authorization header): the cumulative variants land, a
// delta variant's run fails with 403 and stores nothing, and a wrong
// password fails with 401.
func testOTLPSDKCredentials(t *testing.T, variants []otlpVariant) {
	perms := fmt.Sprintf(`read_requires_auth: false
credentials:
  - name: batch
    basic_auth:
      username: batch
      password_hash: %q
    push: ['{job=~"otel-e2e/.*-cumulative"}']
`, bcryptHash(t, "batch-pw"))
	g, _ := startPermissionGateway(t, perms)
	// The header's value is percent-encoded, as the variable's format
	// (W3C baggage) asks: the SDKs decode it.
	header := func(user, pass string) string {
		return "OTEL_EXPORTER_OTLP_HEADERS=Authorization=" + url.PathEscape(basicAuthHeader(user, pass))
	}
	for _, v := range variants {
		if v.temporality == "cumulative" {
			var ids []string
			for r := 1; r <= 3; r++ {
				ids = append(ids, v.run(t, g.URL, r, header("batch", "batch-pw")))
			}
			v.requireScrape(t, g.URL, otlpExpectAfter(v.temporality, 3), ids)
			out, err := v.try(g.URL, otlpRunOptions{run: 4, env: []string{header("batch", "wrong")}})
			if err == nil || !namesStatus(out, http.StatusUnauthorized) {
				t.Fatalf("%s with a wrong password: %v\n%s\nwant a failed run naming 401", v.service(), err, out)
			}
			v.requireScrape(t, g.URL, otlpExpectAfter(v.temporality, 3), ids)
			continue
		}
		out, err := v.try(g.URL, otlpRunOptions{run: 1, env: []string{header("batch", "batch-pw")}})
		if err == nil || !namesStatus(out, http.StatusForbidden) {
			t.Fatalf("%s outside the credential's selectors: %v\n%s\nwant a failed run naming 403", v.service(), err, out)
		}
		groups, err := apiGroupsErr(g.URL)
		if err != nil {
			t.Fatal(err)
		}
		for _, gr := range groups {
			if strings.Contains(string(gr["labels"]), v.jobLabel()) {
				t.Fatalf("%s was refused, yet its group is stored: %s", v.service(), gr["labels"])
			}
		}
	}
}

// namesStatus reports whether a job's output names the HTTP status code,
// by number (the Go SDK) or by its text (the Node SDK).
func namesStatus(out []byte, code int) bool {
	return strings.Contains(string(out), fmt.Sprint(code)) || strings.Contains(string(out), http.StatusText(code))
}

// lastExchange returns the one exchange rec holds (a run's single export)
// and forgets it.
func lastExchange(t *testing.T, rec *otlpRecorder) otlpExchange {
	t.Helper()
	x := rec.take()
	if len(x) != 1 {
		t.Fatalf("%d exports recorded for one run, want 1", len(x))
	}
	return x[0]
}
