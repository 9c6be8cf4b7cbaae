// Command pushgate-bench drives any Pushgateway-compatible gateway on the
// local machine with realistic batch-job pushes and scrapes, and measures
// it. It also runs a null server, the ceiling any gateway is compared to.
//
// Usage:
//
//	pushgate-bench fill   -url http://127.0.0.1:9091 -groups 1000 -clients 8 [-check]
//	pushgate-bench push   -url U -groups 1000 -clients 8 -duration 10s -method PUT [-format protobuf|otlp|otlp-json]
//	pushgate-bench scrape -url U -accept text|text1|openmetrics|protobuf|prom3|<header> [-gzip] -count 10
//	pushgate-bench mixed  -url U -groups 1000 -push-clients 8 -scrape-clients 1 -duration 10s
//	pushgate-bench null   -listen 127.0.0.1:19093 [-static-file F | -static-bytes N]
//	pushgate-bench rss    -pid P
//	pushgate-bench report -in results.jsonl
//	pushgate-bench wait   -url U -timeout 30s
//	pushgate-bench note   -label L -name W -o results.jsonl -text "why a step was skipped"
//
// Every target and listen address must be a loopback address; anything else
// is refused. Every load loop stops at its request count or its duration,
// whichever comes first. See bench/README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks a command-line mistake: exit status 2 instead of 1.
var errUsage = errors.New("usage")

// run executes one subcommand and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: pushgate-bench fill|push|scrape|mixed|null|rss|report|wait|note [flags]; -h after a subcommand lists its flags")
		return 2
	}
	cmds := map[string]func(context.Context, []string, io.Writer, *slog.Logger) error{
		"fill":   cmdFill,
		"push":   cmdPush,
		"scrape": cmdScrape,
		"mixed":  cmdMixed,
		"null":   cmdNull,
		"rss":    cmdRSS,
		"report": cmdReport,
		"wait":   cmdWait,
		"note":   cmdNote,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "pushgate-bench: unknown subcommand %q\n", args[0])
		return 2
	}
	if err := cmd(ctx, args[1:], stdout, log); err != nil {
		if errors.Is(err, errUsage) {
			fmt.Fprintf(stderr, "pushgate-bench %s: %v\n", args[0], err)
			return 2
		}
		log.Error("failed", "subcommand", args[0], "err", err)
		return 1
	}
	return 0
}
