package main

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/pushgate/pushgate/limits"
)

// serverLimits are the http.Server's header size limit and timeouts.
type serverLimits struct {
	maxHeaderBytes    int
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
}

// Server defaults. The read and write timeouts are server-wide rather than
// set per request with http.ResponseController: a GET has no body, so the
// read timeout only ever bounds a push upload, and the write timeout must
// bound every response anyway. 5m lets a 64 MiB push body arrive at about
// 220 KB/s and a large scrape leave as slowly.
const (
	defaultMaxHeaderBytes    = http.DefaultMaxHeaderBytes // 1 MiB
	defaultReadHeaderTimeout = "30s"
	defaultReadTimeout       = "5m"
	defaultWriteTimeout      = "5m"
	defaultIdleTimeout       = "5m"
)

// addLimitFlags declares pushgate's limit flags (none of them exist in the
// reference Pushgateway).
func addLimitFlags(app *kingpin.Application, l *limits.Limits, s *serverLimits) {
	itoa := strconv.Itoa
	for _, ls := range limits.Settings() {
		app.Flag(ls.Flag, ls.Help).Default(itoa(ls.Default)).IntVar(ls.Field(l))
	}
	app.Flag("web.max-header-bytes", "Largest request header block in bytes; larger is answered 431. 0: Go's default, 1 MiB (pushgate only).").
		Default(itoa(defaultMaxHeaderBytes)).IntVar(&s.maxHeaderBytes)
	app.Flag("web.read-header-timeout", "Time allowed to read a request's headers. 0: the read timeout (pushgate only).").
		Default(defaultReadHeaderTimeout).DurationVar(&s.readHeaderTimeout)
	app.Flag("web.read-timeout", "Time allowed to read a whole request, body included. 0: no limit (pushgate only).").
		Default(defaultReadTimeout).DurationVar(&s.readTimeout)
	app.Flag("web.write-timeout", "Time allowed from the end of the request headers to the end of the response. 0: no limit (pushgate only).").
		Default(defaultWriteTimeout).DurationVar(&s.writeTimeout)
	app.Flag("web.idle-timeout", "Time a keep-alive connection may wait for its next request. 0: the read timeout (pushgate only).").
		Default(defaultIdleTimeout).DurationVar(&s.idleTimeout)
}

// checkLimits rejects negative limits: 0 is the way to say "no limit".
func checkLimits(maxBodyBytes int64, l limits.Limits, s serverLimits) error {
	type flagValue struct {
		flag string
		val  int64
	}
	values := []flagValue{{"push.max-body-bytes", maxBodyBytes}}
	for _, ls := range limits.Settings() {
		values = append(values, flagValue{ls.Flag, int64(*ls.Field(&l))})
	}
	values = append(values,
		flagValue{"web.max-header-bytes", int64(s.maxHeaderBytes)},
		flagValue{"web.read-header-timeout", int64(s.readHeaderTimeout)},
		flagValue{"web.read-timeout", int64(s.readTimeout)},
		flagValue{"web.write-timeout", int64(s.writeTimeout)},
		flagValue{"web.idle-timeout", int64(s.idleTimeout)},
	)
	for _, v := range values {
		if v.val < 0 {
			return fmt.Errorf("--%s must not be negative", v.flag)
		}
	}
	return nil
}

// apply sets the limits on srv and returns it.
func (s serverLimits) apply(srv *http.Server) *http.Server {
	srv.MaxHeaderBytes = s.maxHeaderBytes
	srv.ReadHeaderTimeout = s.readHeaderTimeout
	srv.ReadTimeout = s.readTimeout
	srv.WriteTimeout = s.writeTimeout
	srv.IdleTimeout = s.idleTimeout
	return srv
}
