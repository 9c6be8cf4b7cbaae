package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// apiT0 is the push time the API and UI tests use.
var apiT0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// apiTestHandler returns a handler over an empty store; opts may adjust the
// options.
func apiTestHandler(t *testing.T, opts ...func(*Options)) (*Handler, *store.Store) {
	t.Helper()
	st := store.New(store.Options{})
	o := Options{
		Flags:     map[string]string{"web.enable-admin-api": "false", "web.listen-address": ":9091"},
		Build:     BuildInfo{Version: "1.2.3", Revision: "abc", Branch: "main", BuildUser: "u@h", BuildDate: "20240301", GoVersion: "go1.26"},
		StartTime: apiT0,
	}
	for _, f := range opts {
		f(&o)
	}
	h, err := New(st, prometheus.NewRegistry(), o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h, st
}

// apiPushText pushes a text-format body to the group with the given labels
// (name, value pairs).
func apiPushText(t testing.TB, st *store.Store, at time.Time, body string, labels ...string) {
	t.Helper()
	decoded, err := exposition.Decode(strings.NewReader(body), "", exposition.DecodeOptions{})
	if err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	apiPush(t, st, at, decoded.Families, labels...)
}

// apiPush pushes families to the group with the given labels.
func apiPush(t testing.TB, st *store.Store, at time.Time, fams []*dto.MetricFamily, labels ...string) {
	t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		m[labels[i]] = labels[i+1]
	}
	if _, err := st.Push(context.Background(), store.Push{Key: groupkey.New(m), Method: store.Replace, Families: fams, Time: at}); err != nil {
		t.Fatalf("push to %v: %v", m, err)
	}
}

// apiDo serves one request through the handler's router.
func apiDo(h http.Handler, method, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

// requireJSONEqual compares two JSON documents by value.
func requireJSONEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("expected JSON is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		gi, _ := json.MarshalIndent(g, "", "  ")
		wi, _ := json.MarshalIndent(w, "", "  ")
		t.Fatalf("JSON differs\n--- got:\n%s\n--- want:\n%s", gi, wi)
	}
}

func TestAPIHeadersOnEveryAPIResponse(t *testing.T) {
	h, _ := apiTestHandler(t, func(o *Options) { o.EnableAdminAPI = true })
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/status"},
		{http.MethodGet, "/api/v1/metrics"},
		{http.MethodOptions, "/api/v1/metrics"},
		{http.MethodOptions, "/api/v1/status"},
		{http.MethodGet, "/api/v1/admin/groups"},
		{http.MethodDelete, "/api/v1/admin/groups?match[]=bad"},
		{http.MethodPut, "/api/v1/admin/wipe"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := apiDo(h, tc.method, tc.path)
			for _, kv := range [][2]string{
				{"Content-Type", "application/json"},
				{"Access-Control-Allow-Origin", "*"},
				{"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"},
				{"Access-Control-Allow-Headers", "Accept, Authorization, Content-Type, Origin"},
				{"Access-Control-Expose-Headers", "Date"},
				{"Cache-Control", "no-cache, no-store, must-revalidate"},
			} {
				if got := rec.Header().Get(kv[0]); got != kv[1] {
					t.Errorf("%s = %q, want %q", kv[0], got, kv[1])
				}
			}
		})
	}
}

func TestAPIOptionsAnswers200WithAnEmptyBody(t *testing.T) {
	h, _ := apiTestHandler(t)
	rec := apiDo(h, http.MethodOptions, "/api/v1/metrics")
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("got %d %q, want 200 and no body", rec.Code, rec.Body)
	}
}

func TestAPIStatusHasBuildInformationFlagsAndStartTime(t *testing.T) {
	h, _ := apiTestHandler(t)
	rec := apiDo(h, http.MethodGet, "/api/v1/status")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	requireJSONEqual(t, rec.Body.Bytes(), `{"status":"success","data":{
		"build_information":{"branch":"main","buildDate":"20240301","buildUser":"u@h","goVersion":"go1.26","revision":"abc","version":"1.2.3"},
		"flags":{"web.enable-admin-api":"false","web.listen-address":":9091"},
		"start_time":"2024-03-01T12:00:00Z"}}`)
}

func TestAPIMetricsOfAnEmptyStoreIsAnEmptyList(t *testing.T) {
	h, _ := apiTestHandler(t)
	rec := apiDo(h, http.MethodGet, "/api/v1/metrics")
	requireJSONEqual(t, rec.Body.Bytes(), `{"status":"success","data":[]}`)
}

// nativeHistogramFamily is an integer native histogram with schema 0, a zero
// bucket, two positive spans and one negative bucket. Bucket i of schema 0
// is (2^(i-1), 2^i]: positive buckets 1 (1,2]:2, 2 (2,4]:0 (empty, left
// out), 3 (4,8]:3 and 5 (16,32]:1; negative bucket 0 [-1,-0.5):1; zero
// bucket [-0.001,0.001]:4.
func nativeHistogramFamily() *dto.MetricFamily {
	return &dto.MetricFamily{
		Name: proto.String("latency_seconds"),
		Help: proto.String("Latency."),
		Type: dto.MetricType_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount:   proto.Uint64(11),
			SampleSum:     proto.Float64(27.5),
			Schema:        proto.Int32(0),
			ZeroThreshold: proto.Float64(0.001),
			ZeroCount:     proto.Uint64(4),
			PositiveSpan:  []*dto.BucketSpan{{Offset: proto.Int32(1), Length: proto.Uint32(3)}, {Offset: proto.Int32(1), Length: proto.Uint32(1)}},
			PositiveDelta: []int64{2, -2, 3, -2},
			NegativeSpan:  []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(1)}},
			NegativeDelta: []int64{1},
		}}},
	}
}

func TestAPIMetricsHasTheReferenceShapeForEveryType(t *testing.T) {
	h, st := apiTestHandler(t)
	apiPushText(t, st, apiT0, `# HELP requests_total Requests.
# TYPE requests_total counter
requests_total{code="200"} 1027
# TYPE temperature gauge
temperature 1.5838723477166057e+09
# HELP rpc_seconds RPC latency.
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.05
rpc_seconds{quantile="0.99"} 0.3
rpc_seconds_sum 12.5
rpc_seconds_count 100
# TYPE size_bytes histogram
size_bytes_bucket{le="100"} 3
size_bytes_bucket{le="1000"} 7
size_bytes_bucket{le="+Inf"} 8
size_bytes_sum 4500
size_bytes_count 8
untyped_thing 42
`, "job", "batch", "instance", "i1")
	apiPush(t, st, apiT0.Add(time.Second), []*dto.MetricFamily{nativeHistogramFamily()}, "job", "native")

	rec := apiDo(h, http.MethodGet, "/api/v1/metrics")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	requireJSONEqual(t, rec.Body.Bytes(), `{"status":"success","data":[
	{
		"labels":{"instance":"i1","job":"batch"},
		"last_push_successful":true,
		"push_failure_time_seconds":{"time_stamp":"2024-03-01T12:00:00Z","type":"GAUGE",
			"help":"Last Unix time when changing this group in the Pushgateway failed.",
			"metrics":[{"labels":{"instance":"i1","job":"batch"},"value":"0"}]},
		"push_time_seconds":{"time_stamp":"2024-03-01T12:00:00Z","type":"GAUGE",
			"help":"Last Unix time when changing this group in the Pushgateway succeeded.",
			"metrics":[{"labels":{"instance":"i1","job":"batch"},"value":"1.7092944e+09"}]},
		"requests_total":{"time_stamp":"2024-03-01T12:00:00Z","type":"COUNTER","help":"Requests.",
			"metrics":[{"labels":{"code":"200","instance":"i1","job":"batch"},"value":"1027"}]},
		"rpc_seconds":{"time_stamp":"2024-03-01T12:00:00Z","type":"SUMMARY","help":"RPC latency.",
			"metrics":[{"labels":{"instance":"i1","job":"batch"},"quantiles":{"0.5":"0.05","0.99":"0.3"},"count":"100","sum":"12.5"}]},
		"size_bytes":{"time_stamp":"2024-03-01T12:00:00Z","type":"HISTOGRAM",
			"metrics":[{"labels":{"instance":"i1","job":"batch"},"buckets":{"100":"3","1000":"7","+Inf":"8"},"count":"8","sum":"4500"}]},
		"temperature":{"time_stamp":"2024-03-01T12:00:00Z","type":"GAUGE",
			"metrics":[{"labels":{"instance":"i1","job":"batch"},"value":"1.5838723477166057e+09"}]},
		"untyped_thing":{"time_stamp":"2024-03-01T12:00:00Z","type":"UNTYPED",
			"metrics":[{"labels":{"instance":"i1","job":"batch"},"value":"42"}]}
	},
	{
		"labels":{"job":"native"},
		"last_push_successful":true,
		"latency_seconds":{"time_stamp":"2024-03-01T12:00:01Z","type":"HISTOGRAM","help":"Latency.",
			"metrics":[{"labels":{"instance":"","job":"native"},"count":"11","sum":"27.5","buckets":[
				[1,"-1","-0.5","1"],
				[3,"-0.001","0.001","4"],
				[0,"1","2","2"],
				[0,"4","8","3"],
				[0,"16","32","1"]]}]},
		"push_failure_time_seconds":{"time_stamp":"2024-03-01T12:00:01Z","type":"GAUGE",
			"help":"Last Unix time when changing this group in the Pushgateway failed.",
			"metrics":[{"labels":{"instance":"","job":"native"},"value":"0"}]},
		"push_time_seconds":{"time_stamp":"2024-03-01T12:00:01Z","type":"GAUGE",
			"help":"Last Unix time when changing this group in the Pushgateway succeeded.",
			"metrics":[{"labels":{"instance":"","job":"native"},"value":"1.709294401e+09"}]}
	}]}`)
}

func TestAPIMetricsGroupKeysWinOverFamiliesNamedLikeThem(t *testing.T) {
	h, st := apiTestHandler(t)
	apiPushText(t, st, apiT0, "labels 1\nlast_push_successful 0\nother 2\n", "job", "clash")
	rec := apiDo(h, http.MethodGet, "/api/v1/metrics")
	var body struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("decode: %v\n%s", err, rec.Body)
	}
	if len(body.Data) != 1 {
		t.Fatalf("got %d groups, want 1", len(body.Data))
	}
	g := body.Data[0]
	if string(g["labels"]) != `{"job":"clash"}` || string(g["last_push_successful"]) != "true" {
		t.Errorf("labels = %s, last_push_successful = %s; the group's own keys must win", g["labels"], g["last_push_successful"])
	}
	if _, ok := g["other"]; !ok {
		t.Errorf("family other missing: %s", rec.Body)
	}
	if n := strings.Count(rec.Body.String(), `"labels":{"job":"clash"}`); n != 1 {
		t.Errorf(`"labels" key appears %d times at group level, want 1`, n)
	}
}

func TestAPIMetricsIsSortedByGroupKey(t *testing.T) {
	h, st := apiTestHandler(t)
	for _, job := range []string{"c", "a", "b"} {
		apiPushText(t, st, apiT0, "x 1\n", "job", job, "instance", job)
	}
	rec := apiDo(h, http.MethodGet, "/api/v1/metrics")
	var body struct {
		Data []struct {
			Labels map[string]string `json:"labels"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range body.Data {
		got = append(got, g.Labels["job"])
	}
	if strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("order %v, want a,b,c", got)
	}
}

func TestAPIFormatFloatIsGoDefaultFormatting(t *testing.T) {
	for _, v := range []float64{0, 1, -1, 0.1, 1.5, 1027, 1e6, 123456789, 1.5838723477166057e+09, 1e21, 1e-5, 0.0001,
		3.14159, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1)} {
		if got, want := formatFloat(v), fmt.Sprint(v); got != want {
			t.Errorf("formatFloat(%v) = %q, fmt.Sprint gives %q", v, got, want)
		}
	}
}

func TestAPIBucketBoundFollowsTheExponentialSchema(t *testing.T) {
	for _, tc := range []struct {
		idx, schema int32
		want        float64
	}{
		{0, 0, 1},
		{1, 0, 2},
		{-1, 0, 0.5},
		{3, 0, 8},
		{1, -1, 4},
		{-2, -2, 1.0 / 256},
		{1, 1, 1.414213562373095},
		{2, 1, 2},
		{8, 3, 2},
		{1, 3, 1.0905077326652577},
		{-9, 3, 0.45850202160233555},
		{1, 8, 1.0027112750502025},
		{1024, 0, math.MaxFloat64},
		{1023, 0, math.Ldexp(1, 1023)},
		// Oracle values: the bound mantissas Prometheus' tables hold.
		{-1, 1, 0.7071067811865475},
		{-1, 2, 0.8408964152537144},
		{-7, 3, 0.5452538663326288},
		{-3, 3, 0.7711054127039704},
		{-1, 3, 0.9170040432046711},
		{-15, 4, 0.5221368912137069},
		{-13, 4, 0.5693943173783458},
		{-4, 4, 0.8408964152537144},
		{-1, 4, 0.9576032806985735},
		{-11, 4, 0.620928906036742},
		{-5, 4, 0.805245165974627},
	} {
		if got := bucketBound(tc.idx, tc.schema); got != tc.want {
			t.Errorf("bucketBound(%d, %d) = %v, want %v", tc.idx, tc.schema, got, tc.want)
		}
	}
}

func TestAPIMetricsStreamsOneGroupAtATime(t *testing.T) {
	h, st := apiTestHandler(t)
	for i := 0; i < 50; i++ {
		apiPushText(t, st, apiT0, "x 1\n", "job", fmt.Sprintf("j%02d", i), "instance", fmt.Sprint(i))
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/api/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !json.Valid(b) || !bytes.HasPrefix(b, []byte(`{"status":"success","data":[{`)) {
		t.Fatalf("invalid streamed JSON: %.200s", b)
	}
	if resp.ContentLength != -1 && resp.ContentLength != int64(len(b)) {
		t.Fatalf("content length %d for %d bytes", resp.ContentLength, len(b))
	}
}

// mustDecodeText decodes a text-format body.
func mustDecodeText(t testing.TB, body string) []*dto.MetricFamily {
	t.Helper()
	decoded, err := exposition.Decode(strings.NewReader(body), "", exposition.DecodeOptions{})
	if err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return decoded.Families
}

// apiDo2 serves a prepared request through the handler's router.
func apiDo2(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestAPIMetricsIsCompactJSON(t *testing.T) {
	h, st := apiTestHandler(t)
	apiPushText(t, st, apiT0, "a 1\n", "job", "x")
	apiPushText(t, st, apiT0, "a 2\n", "job", "y")
	body := apiDo(h, http.MethodGet, "/api/v1/metrics").Body.String()
	if strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "]}\n") || !strings.Contains(body, `}},{"labels":{"job":"y"},"last_push_successful":true,"a":{`) {
		t.Fatalf("not one compact line: %s", body)
	}
}
