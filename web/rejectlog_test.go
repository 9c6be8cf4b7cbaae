package web

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// warnLines returns the warn-level lines logged so far.
func warnLines(buf *bytes.Buffer) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(line, "level=WARN") {
			out = append(out, line)
		}
	}
	return out
}

// TestRejectedPushesAreLoggedAtWarnAtMostOncePerSecondPerReason drives the
// push handler with a fake clock and checks which rejections make a warn
// line: the first of each reason, then none of that reason for a second,
// then one that counts the lines left out meanwhile.
func TestRejectedPushesAreLoggedAtWarnAtMostOncePerSecondPerReason(t *testing.T) {
	var buf bytes.Buffer
	h, _ := newTestHandler(t, Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	now := time.Unix(1_700_000_000, 0)
	h.rejects.now = func() time.Time { return now }

	push := func(target, body string) int {
		t.Helper()
		r := httptest.NewRequest(http.MethodPut, target, strings.NewReader(body))
		r.RemoteAddr = "127.0.0.1:40001"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	steps := []struct {
		name      string
		advance   time.Duration
		target    string
		body      string
		wantCode  int
		wantLines int
		wantText  []string
	}{
		{"the first unparsable body is logged with the client and the reason", 0, "/metrics/job/a", "not a metric line\n", 400, 1,
			[]string{`msg="push rejected"`, "client=127.0.0.1:40001", "reason=body", "code=400", "suppressed=0"}},
		{"a second one within the second is not logged", 300 * time.Millisecond, "/metrics/job/a", "{\n", 400, 1, nil},
		{"a third one within the second is not logged either", 300 * time.Millisecond, "/metrics/job/a", "x y z\n", 400, 1, nil},
		{"another reason within the same second is logged", 0, "/metrics/job/", "m 1\n", 400, 2,
			[]string{"reason=path", "suppressed=0"}},
		{"a successful push is not logged", 0, "/metrics/job/a", "m 1\n", 200, 2, nil},
		{"an inconsistent push is logged with the store's reason", 0, "/metrics/job/b", "# TYPE m counter\nm 1\n", 400, 3,
			[]string{"reason=inconsistent", "client=127.0.0.1:40001"}},
		{"a second after the first, the reason is logged again with the count left out", 400 * time.Millisecond, "/metrics/job/a", "{\n", 400, 4,
			[]string{"reason=body", "suppressed=2"}},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if code := push(s.target, s.body); code != s.wantCode {
			t.Fatalf("%s: status %d, want %d", s.name, code, s.wantCode)
		}
		lines := warnLines(&buf)
		if len(lines) != s.wantLines {
			t.Fatalf("%s: %d warn lines, want %d:\n%s", s.name, len(lines), s.wantLines, buf.String())
		}
		for _, want := range s.wantText {
			if last := lines[len(lines)-1]; !strings.Contains(last, want) {
				t.Errorf("%s: last warn line %q lacks %q", s.name, last, want)
			}
		}
	}
}
