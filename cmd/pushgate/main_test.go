package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// runMainEnv makes this test binary run main() instead of the tests, so
// that tests can start the real program under any argv[0].
const runMainEnv = "PUSHGATE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// program returns a command running the gateway's main() as argv0 with args.
func program(t *testing.T, argv0 string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: exe, Args: append([]string{argv0}, args...), Env: append(os.Environ(), runMainEnv+"=1")}
	return cmd
}

// TestTheCommandLineBehavesLikeKingpinsDefaultApplication runs the program
// to completion and checks its output streams and exit code.
func TestTheCommandLineBehavesLikeKingpinsDefaultApplication(t *testing.T) {
	cases := []struct {
		name       string
		argv0      string
		args       []string
		wantCode   int
		wantStdout *regexp.Regexp
		wantStderr string // exact
	}{
		{"--version prints version.Print's format to stdout", "pushgate", []string{"--version"}, 0,
			regexp.MustCompile(`^pushgate, version ` + regexp.QuoteMeta(devVersion) + ` \(branch: .*, revision: .*\)\n  build user: .*\n  build date: .*\n  go version: +go.*\n  platform: +\w+/\w+\n  tags: .*\n$`), ""},
		{"--help prints the usage to stdout under the name the program was called by", "/opt/bin/my-gateway", []string{"--help"}, 0,
			regexp.MustCompile(`(?s)^usage: my-gateway \[<flags>\].*--web\.listen-address.*--persistence\.export-reference`), ""},
		{"-h is --help", "pushgate", []string{"-h"}, 0, regexp.MustCompile(`^usage: pushgate `), ""},
		{"an unknown flag is kingpin's error line and exit code 1", "/opt/bin/my-gateway", []string{"--bogus"}, 1,
			regexp.MustCompile(`^$`), "my-gateway: error: unknown long flag '--bogus', try --help\n"},
		{"a flag value pushgate refuses is reported the same way", "pushgate", []string{"--persistence.interval=-1s"}, 1,
			regexp.MustCompile(`^$`), "pushgate: error: --persistence.interval must not be negative, got -1s, try --help\n"},
		{"a bad GC flag is reported the same way", "pushgate", []string{"--store.gc-percent=-2"}, 1,
			regexp.MustCompile(`^$`), "pushgate: error: --store.gc-percent must be -1 (off) or more, got -2, try --help\n"},
		{"an export without a persistence file is refused", "pushgate", []string{"--persistence.export-reference=/tmp/x"}, 1,
			regexp.MustCompile(`^$`), "pushgate: error: --persistence.export-reference needs --persistence.file, the state to export, try --help\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := program(t, tc.argv0, tc.args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if !tc.wantStdout.Match(stdout.Bytes()) {
				t.Errorf("stdout does not match %s:\n%s", tc.wantStdout, stdout.String())
			}
			if stderr.String() != tc.wantStderr {
				t.Errorf("stderr = %q, want %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

// logBuffer collects a process's output for concurrent reading.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// running is a started program.
type running struct {
	cmd  *exec.Cmd
	logs *logBuffer
	done chan struct{}
	err  error
}

// start starts the program with args; it is killed when the test ends.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	r := &running{cmd: program(t, "pushgate", args...), logs: &logBuffer{}, done: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("program output:\n%s", r.logs)
		}
	})
	return r
}

// waitFor polls the output until it matches re, for at most 30 s.
func (r *running) waitFor(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindString(r.logs.String()); m != "" {
			return m
		}
		select {
		case <-r.done:
			if m := re.FindString(r.logs.String()); m != "" {
				return m
			}
			t.Fatalf("the program exited (%v) before logging %s", r.err, re)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no log line matching %s within 30s", re)
	return ""
}

// exitCode waits up to 30 s for the program to end.
func (r *running) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the program did not exit within 30s")
	}
	if ee, ok := r.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return 0
}

// TestStartUpLogsInTheReferencesGoKitStyleAndSurvivesSIGHUP starts the
// gateway as Debian's /etc/default would (with --web.local-assets and
// --persistence.interval=0s), checks the start-up lines in promslog's go-kit
// style, sends SIGHUP (what `systemctl reload` does) and checks the process
// lives on, then stops it with SIGTERM.
func TestStartUpLogsInTheReferencesGoKitStyleAndSurvivesSIGHUP(t *testing.T) {
	dir := t.TempDir()
	r := start(t, "--web.listen-address=127.0.0.1:0", "--web.local-assets=/usr/share/prometheus/pushgateway",
		"--persistence.file="+filepath.Join(dir, "pushgateway.data"), "--persistence.interval=0s")
	ready := r.waitFor(t, regexp.MustCompile(`(?m)^.*msg=ready .*$`))
	logs := r.logs.String()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	goKit := regexp.MustCompile(`^ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=(debug|info|warn|error) caller=[\w.]+\.go:\d+ msg=`)
	for _, line := range lines {
		if !goKit.MatchString(line) {
			t.Errorf("not a go-kit style line: %s", line)
		}
	}
	for _, want := range []string{
		`msg="starting pushgate" version="(version=` + devVersion + `, branch=`,
		`msg="build context" build_context="(go=`,
		`msg="ignoring --web.local-assets: pushgate's UI assets are built in" path=/usr/share/prometheus/pushgateway`,
	} {
		if !strings.Contains(lines[0]+"\n"+lines[1]+"\n"+lines[2], want) {
			t.Errorf("the first lines lack %s", want)
		}
	}
	if !strings.Contains(ready, "persistence="+filepath.Join(dir, "pushgateway.data")) {
		t.Errorf("ready line: %s", ready)
	}

	if err := r.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, regexp.MustCompile(`msg="received SIGHUP: nothing to reload \(no --web.permissions-file\)"`))
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.exitCode(t); code != 0 {
		t.Fatalf("exit code %d after SIGHUP then SIGTERM, want 0", code)
	}
}

// TestSIGHUPReloadsThePermissionFile checks the other branch: with a
// permission file, SIGHUP reloads it.
func TestSIGHUPReloadsThePermissionFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "permissions.yml")
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	policy := "credentials:\n  - name: ops\n    bearer_token_hash: \"" + string(hash) + "\"\n    admin: true\n"
	if err := os.WriteFile(file, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, "--web.listen-address=127.0.0.1:0", "--web.permissions-file="+file)
	r.waitFor(t, regexp.MustCompile(`msg=ready`))
	if err := r.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, regexp.MustCompile(`msg="permission file reloaded"`))
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	if code := r.exitCode(t); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}

// TestJSONLogsUsePromslogsGoKitKeys checks --log.format=json: one object a
// line with the keys ts, caller, level and msg.
func TestJSONLogsUsePromslogsGoKitKeys(t *testing.T) {
	r := start(t, "--web.listen-address=127.0.0.1:0", "--log.format=json")
	r.waitFor(t, regexp.MustCompile(`"msg":"ready"`))
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	r.exitCode(t)
	for _, line := range strings.Split(strings.TrimSpace(r.logs.String()), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		for _, key := range []string{"ts", "caller", "level", "msg"} {
			if _, ok := obj[key]; !ok {
				t.Errorf("no %q in %s", key, line)
			}
		}
		if _, ok := obj["time"]; ok {
			t.Errorf("slog's own time key in %s", line)
		}
	}
}

// TestAPortInUseStopsTheStartBeforeReady holds the listen address and checks
// that the gateway exits 1 without ever logging that it is ready.
func TestAPortInUseStopsTheStartBeforeReady(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := start(t, "--web.listen-address="+l.Addr().String())
	if code := r.exitCode(t); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	logs := r.logs.String()
	if strings.Contains(logs, "msg=ready") || !strings.Contains(logs, "address already in use") {
		t.Fatalf("want an error about the address and no ready line:\n%s", logs)
	}
}

func TestAZeroPersistenceIntervalCompactsAtMostOnceASecond(t *testing.T) {
	cases := []struct {
		name string
		flag time.Duration
		want time.Duration
	}{
		{"0s, which the reference accepts, is one second", 0, time.Second},
		{"a positive interval is kept", 90 * time.Second, 90 * time.Second},
		{"a short positive interval is kept", 100 * time.Millisecond, 100 * time.Millisecond},
	}
	for _, tc := range cases {
		if got := compactInterval(tc.flag); got != tc.want {
			t.Errorf("%s: compactInterval(%s) = %s, want %s", tc.name, tc.flag, got, tc.want)
		}
	}
	if _, err := parseFlags([]string{"--persistence.interval=0s"}); err != nil {
		t.Errorf("--persistence.interval=0s refused: %v", err)
	}
}

// TestDevVersionFollowsTheVersionFile keeps unstamped builds' version next
// to the released one.
func TestDevVersionFollowsTheVersionFile(t *testing.T) {
	b, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(b)) + "-dev"; devVersion != want {
		t.Fatalf("devVersion = %q, want %q (VERSION holds %q)", devVersion, want, strings.TrimSpace(string(b)))
	}
}

// parseFlags parses args as the program "pushgate", with help and version
// output on stdout.
func parseFlags(args []string) (*config, error) {
	return parseCommandLine("pushgate", args, os.Stdout, os.Stderr)
}
