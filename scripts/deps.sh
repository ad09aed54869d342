#!/bin/sh
# Installs what building or testing aivis needs beyond Go, from Debian's
# packages. `deps.sh build`: a C compiler (the SQLite driver uses cgo).
# `deps.sh cluster`: that, and what scripts/run-cluster.sh runs (psql, jq).
# `deps.sh image`: a C compiler, CA certificates and podman (make image).
# `deps.sh release`: a C compiler and, for linux/arm64 (in RELEASE_ARCHS),
# the cross compiler and its C library.
# `deps.sh test`: a C compiler, git, Node.js and npm (tests check aivis
# against the Standard Webhooks library and axe-core), Python 3 and pip (the
# Python client's tests and its install), Chromium (the
# dashboard's browser tests), jq and shellcheck (the scripts' tests),
# podman and runc (the image's test), systemd-analyze (the unit's) and
# promtool (the alerts' tests: Debian's prometheus package), and the arm64
# cross compiler with qemu-user (the arm64 release's test runs what it built).
# As root it installs what is missing; otherwise it names the one command
# that does and fails.
set -eu

need_go="1.26"
what="${1:-test}"

# command:package pairs, or /file:package for a package of no command.
cc="gcc:gcc /usr/include/stdio.h:libc6-dev"
case "$what" in
build) pairs=$cc ;;
cluster) pairs="$cc psql:postgresql-client jq:jq" ;;
image) pairs="$cc /etc/ssl/certs/ca-certificates.crt:ca-certificates podman:podman" ;;
release)
	pairs=$cc
	case "${RELEASE_ARCHS:-arm64}" in
	*arm64*) pairs="$pairs aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu /usr/aarch64-linux-gnu/lib/libc.a:libc6-dev-arm64-cross" ;;
	esac
	;;
test) pairs="$cc git:git node:nodejs npm:npm python3:python3 pip3:python3-pip chromium:chromium jq:jq shellcheck:shellcheck /etc/ssl/certs/ca-certificates.crt:ca-certificates podman:podman runc:runc systemd-analyze:systemd promtool:prometheus aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu /usr/aarch64-linux-gnu/lib/libc.a:libc6-dev-arm64-cross qemu-aarch64:qemu-user" ;;
*) echo "usage: $0 build|cluster|image|release|test" >&2; exit 2 ;;
esac

if ! command -v go >/dev/null 2>&1; then
	echo "aivis needs Go $need_go or later: https://go.dev/doc/install" >&2
	exit 1
fi
have_go=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -n 1)" != "$need_go" ]; then
	echo "aivis needs Go $need_go or later; this is Go $have_go: https://go.dev/doc/install" >&2
	exit 1
fi

missing=""
for p in $pairs; do
	cmd=${p%%:*}
	pkg=${p#*:}
	case "$cmd" in
	/*) [ -e "$cmd" ] && continue ;;
	*) command -v "$cmd" >/dev/null 2>&1 && continue ;;
	esac
	# Chromium may be installed under another name or named by AIVIS_CHROMIUM.
	if [ "$pkg" = chromium ]; then
		[ -n "${AIVIS_CHROMIUM:-}" ] && continue
		command -v chromium-browser >/dev/null 2>&1 && continue
	fi
	missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0

missing=${missing# }
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	target=$what
	[ "$what" = cluster ] && target=run-cluster
	echo "make $target needs: $missing" >&2
	if command -v apt-get >/dev/null 2>&1; then
		echo "install them with: sudo apt-get install -y $missing" >&2
	else
		echo "install them with your system's package manager (Debian's package names above)" >&2
	fi
	exit 1
fi
echo "installing $missing (Debian packages)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # one word per package
apt-get install -y -qq $missing >/dev/null
