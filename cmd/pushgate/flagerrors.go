package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
)

// nameFailedFlag returns parseErr, the error of app.Parse(args), prefixed
// with the flag whose value was refused. Kingpin reports a value its parser
// refuses by the parser's words alone ("units: invalid xyz"), which does not
// say which of thirty flags is wrong. The flag is found by setting the
// command line's values again, in order, until one fails: the application is
// abandoned after a parse error, so setting values twice is harmless.
func nameFailedFlag(app *kingpin.Application, args []string, parseErr error) error {
	ctx, err := app.ParseContext(args)
	if err != nil {
		// Kingpin's own syntax errors ("unknown long flag '--x'") name
		// the flag already.
		return parseErr
	}
	for _, el := range ctx.Elements {
		flag, ok := el.Clause.(*kingpin.FlagClause)
		if !ok || el.Value == nil {
			continue
		}
		v := flag.Model().Value
		if v == nil {
			continue
		}
		if err := v.Set(*el.Value); err != nil {
			return fmt.Errorf("invalid value %q for --%s: %w", *el.Value, flag.Model().Name, err)
		}
	}
	return parseErr
}
