package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/mdlayher/vsock"
	toolkitweb "github.com/prometheus/exporter-toolkit/web"
)

// listen opens the sockets the gateway serves on, as exporter-toolkit's
// ListenAndServe would (systemd socket activation with
// --web.systemd-socket, else every --web.listen-address, vsock://:port
// included), but before serving starts: the caller then knows the gateway
// accepts connections, and a port in use fails the start at once.
func listen(flags *toolkitweb.FlagConfig, logger *slog.Logger) ([]net.Listener, error) {
	if flags.WebSystemdSocket != nil && *flags.WebSystemdSocket {
		logger.Info("Listening on systemd activated listeners instead of port listeners.")
		ls, err := activation.Listeners()
		if err != nil {
			return nil, fmt.Errorf("systemd socket activation: %w", err)
		}
		if len(ls) == 0 {
			return nil, errors.New("no socket activation file descriptors found")
		}
		return ls, nil
	}
	if flags.WebListenAddresses == nil || len(*flags.WebListenAddresses) == 0 {
		return nil, errors.New("no --web.listen-address given")
	}
	var ls []net.Listener
	for _, address := range *flags.WebListenAddresses {
		l, err := listenOn(address)
		if err != nil {
			for _, open := range ls {
				open.Close()
			}
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// listenOn opens one listen address: vsock://:port or a TCP host:port.
func listenOn(address string) (net.Listener, error) {
	if !strings.HasPrefix(address, "vsock://") {
		l, err := net.Listen("tcp", address)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", address, err)
		}
		return l, nil
	}
	u, err := url.Parse(address)
	if err != nil {
		return nil, fmt.Errorf("parse vsock address %q: %w", address, err)
	}
	_, portText, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, fmt.Errorf("parse vsock address %q: %w", address, err)
	}
	port, err := strconv.ParseUint(portText, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse vsock port in %q: %w", address, err)
	}
	l, err := vsock.Listen(uint32(port), nil)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", address, err)
	}
	return l, nil
}
