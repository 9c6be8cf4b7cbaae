package main

import (
	"github.com/prometheus/common/version"

	"github.com/pushgate/pushgate/web"
)

// devVersion is the version of a build that did not stamp
// github.com/prometheus/common/version.Version with -ldflags -X (go build,
// go run, go test). `make build` and `make release` stamp the VERSION file's
// content; TestDevVersionFollowsTheVersionFile keeps the two in step.
const devVersion = "0.1.0-dev"

// setDefaultVersion fills version.Version for unstamped builds, so that
// --version, pushgateway_build_info and the status page never show an empty
// version. The version package keeps build information in package
// variables; this is the only write to them outside the linker.
func setDefaultVersion() {
	if version.Version == "" {
		version.Version = devVersion
	}
}

// buildInfo describes this binary.
func buildInfo() web.BuildInfo {
	return web.BuildInfo{
		Version:   version.Version,
		Revision:  version.GetRevision(),
		Branch:    version.Branch,
		BuildUser: version.BuildUser,
		BuildDate: version.BuildDate,
		GoVersion: version.GoVersion,
		Tags:      version.GetTags(),
	}
}
