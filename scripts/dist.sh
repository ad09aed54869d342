#!/bin/sh
# Builds what aivis ships; the Makefile runs it (make rootfs, image,
# release), with VERSION, COMMIT and SOURCE_DATE_EPOCH set and LDFLAGS
# stamping them (internal/buildinfo).
#
#   dist.sh rootfs DIR       the container image's files: DIR/rootfs, the
#                            tree of the image, and DIR/data, its /data
#   dist.sh image DIR NAME   the image NAME:$VERSION and NAME:latest, built
#                            by podman from DIR (made by rootfs) with the
#                            Dockerfile's last stage
#   dist.sh release DIR      DIR/aivis-$VERSION-linux-$ARCH.tar.gz for each
#                            of $RELEASE_ARCHS (amd64 arm64), each with an
#                            SBOM of every binary (CycloneDX JSON, sbom/),
#                            and DIR/SHA256SUMS
#
# Every binary is linux, built with -trimpath and statically linked: aivis
# with cgo (SQLite) against glibc's static library, resolving names with
# Go's own resolver (netgo) and users with Go's (osusergo), SQLite without
# extension loading (which would need dlopen); the connectors without cgo.
# A file's time in an archive or an image is SOURCE_DATE_EPOCH: two
# builds of one commit are byte for byte the same.
set -eu

GO=${GO:-go}
: "${VERSION:?run by make: VERSION is the version to stamp (git describe, or the VERSION file)}"
: "${SOURCE_DATE_EPOCH:?run by make: SOURCE_DATE_EPOCH is the commit time}"
LDFLAGS=${LDFLAGS:-}
CYCLONEDX=${CYCLONEDX:-cyclonedx-gomod}
# The image's user and group: no name in /etc/passwd but its own.
UID_GID=65532

# binaries OUT ARCH: aivis in OUT, the official connectors in OUT/connectors.
binaries() {
	out=$1 arch=$2
	cc=${CC:-gcc}
	if [ "$arch" != "$("$GO" env GOHOSTARCH)" ]; then
		case "$arch" in
		arm64) cc=aarch64-linux-gnu-gcc ;;
		amd64) cc=x86_64-linux-gnu-gcc ;;
		*) echo "dist.sh: no C cross compiler known for $arch" >&2; exit 2 ;;
		esac
	fi
	mkdir -p "$out/connectors"
	CGO_ENABLED=1 GOOS=linux GOARCH=$arch CC=$cc "$GO" build -trimpath -tags netgo,osusergo,sqlite_omit_load_extension \
		-ldflags "$LDFLAGS -s -w -linkmode external -extldflags -static" -o "$out/aivis" ./cmd/aivis
	for main in connectors/*/main.go; do
		c=${main#connectors/}
		c=${c%/main.go}
		CGO_ENABLED=0 GOOS=linux GOARCH=$arch "$GO" build -trimpath -ldflags "-s -w" -o "$out/connectors/$c" "./connectors/$c"
	done
}

# sbom OUT ARCH: the SBOM of each binary binaries built, in OUT/sbom.
sbom() {
	out=$1 arch=$2
	mkdir -p "$out/sbom"
	GOOS=linux GOARCH=$arch CGO_ENABLED=1 GOFLAGS=-tags=netgo,osusergo,sqlite_omit_load_extension \
		"$CYCLONEDX" app -json -licenses -noserial -notimestamp -main cmd/aivis -output "$out/sbom/aivis.cdx.json" .
	for c in "$out"/connectors/*; do
		c=${c##*/}
		GOOS=linux GOARCH=$arch CGO_ENABLED=0 GOFLAGS='' \
			"$CYCLONEDX" app -json -licenses -noserial -notimestamp -main "connectors/$c" -output "$out/sbom/$c.cdx.json" .
	done
}

# archive DIR NAME: DIR/NAME.tar.gz of DIR/NAME, the same for the same files.
archive() {
	tar -C "$1" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		--mode='u+rwX,go+rX,go-w' --format=gnu -cf - "$2" | gzip -n >"$1/$2.tar.gz"
}

rootfs() {
	dir=$1
	rm -rf "$dir"
	mkdir -p "$dir/rootfs/usr/bin" "$dir/rootfs/usr/lib/aivis" "$dir/rootfs/etc/ssl/certs" "$dir/rootfs/tmp" "$dir/data"
	binaries "$dir/bin" "$("$GO" env GOHOSTARCH)"
	cp "$dir/bin/aivis" "$dir/rootfs/usr/bin/aivis"
	cp -r "$dir/bin/connectors" "$dir/rootfs/usr/lib/aivis/connectors"
	rm -r "${dir:?}/bin"
	chmod 0555 "$dir/rootfs/usr/bin/aivis" "$dir/rootfs/usr/lib/aivis/connectors"/*
	chmod 0755 "$dir/rootfs/usr/lib/aivis/connectors"
	cp /etc/ssl/certs/ca-certificates.crt "$dir/rootfs/etc/ssl/certs/ca-certificates.crt"
	printf 'root:x:0:0:root:/root:/sbin/nologin\naivis:x:%s:%s:aivis:/data:/sbin/nologin\n' "$UID_GID" "$UID_GID" >"$dir/rootfs/etc/passwd"
	printf 'root:x:0:\naivis:x:%s:\n' "$UID_GID" >"$dir/rootfs/etc/group"
	chmod 0644 "$dir/rootfs/etc/passwd" "$dir/rootfs/etc/group" "$dir/rootfs/etc/ssl/certs/ca-certificates.crt"
	chmod 1777 "$dir/rootfs/tmp"
	chmod 0700 "$dir/data"
}

image() {
	dir=$1 name=$2
	# The Dockerfile's last stage, its files taken from dir rather than
	# from its build stage.
	sed -n '/^FROM scratch/,$p' Dockerfile | sed 's| --from=build||; s| /out/| ./|' >"$dir/Containerfile"
	podman build --timestamp "$SOURCE_DATE_EPOCH" -f "$dir/Containerfile" -t "$name:$VERSION" -t "$name:latest" "$dir"
}

release() {
	dir=$1
	rm -rf "$dir"
	mkdir -p "$dir"
	for arch in ${RELEASE_ARCHS:-amd64 arm64}; do
		name=aivis-$VERSION-linux-$arch
		binaries "$dir/$name" "$arch"
		sbom "$dir/$name" "$arch"
		cp README.md deploy/systemd/aivis.service "$dir/$name/"
		archive "$dir" "$name"
		rm -r "${dir:?}/$name"
	done
	(cd "$dir" && sha256sum -- *.tar.gz >SHA256SUMS)
}

case "${1:-}/$#" in
rootfs/2) rootfs "$2" ;;
image/3) image "$2" "$3" ;;
release/2) release "$2" ;;
*)
	echo "usage: $0 rootfs DIR | image DIR NAME | release DIR" >&2
	exit 2
	;;
esac
