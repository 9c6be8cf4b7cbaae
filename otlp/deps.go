package otlp

import (
	_ "github.com/prometheus/otlptranslator"
	_ "go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)
