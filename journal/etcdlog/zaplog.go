package etcdlog

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"go.uber.org/zap/zapcore"
)

// slogCore hands the etcd client's zap log entries to a slog.Handler, so
// that they reach the gateway's log in its format. The client's Info
// messages (connection and retry chatter) go to Debug.
type slogCore struct {
	h      slog.Handler
	fields []zapcore.Field
}

func zapLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l >= zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelDebug
	}
}

// Enabled implements zapcore.LevelEnabler.
func (c slogCore) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), zapLevel(l))
}

// With implements zapcore.Core.
func (c slogCore) With(fields []zapcore.Field) zapcore.Core {
	return slogCore{h: c.h, fields: append(slices.Clip(c.fields), fields...)}
}

// Check implements zapcore.Core.
func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write implements zapcore.Core.
func (c slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	r := slog.NewRecord(e.Time, zapLevel(e.Level), e.Message, 0)
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		r.AddAttrs(slog.Any(k, enc.Fields[k]))
	}
	return c.h.Handle(context.Background(), r)
}

// Sync implements zapcore.Core.
func (c slogCore) Sync() error { return nil }
