# Sourced by scripts/test and .ci/run: the build flags every Linux build of
# the checks and tests shares, so that each package is compiled once per
# configuration (plain and -race) however many commands use it.
#
# The dependencies from github.com, golang.org/x and google.golang.org are
# compiled without optimisation or inlining (-N -l): the tests exercise
# recall's own code, compiled as it ships (the last pattern, which wins for
# recall's packages, gives it no flags), and the standard library and
# modernc.org's SQLite, whose speed the tests feel, stay optimised. A cold
# compile of those dependencies is about 40% cheaper that way (openai-go:
# 36 s instead of 58 on two cores).
recall_gcflags="'-gcflags=github.com/...=-N -l' '-gcflags=golang.org/x/...=-N -l' '-gcflags=google.golang.org/...=-N -l' '-gcflags=github.com/recallkit/recall/...='"
case ${GOFLAGS:-} in
*"$recall_gcflags"*) ;; # sourced before (.ci/run, then scripts/test)
*) export GOFLAGS="${GOFLAGS:+$GOFLAGS }$recall_gcflags" ;;
esac
