#!/usr/bin/env bash
# Builds fsd's release archives with go build alone, as .goreleaser.yaml does:
# the same targets, flags, version stamp, archive names and checksums.txt,
# then runs this machine's binary and checks that `fsd version` names the
# stamped version. .ci/run runs it; a test in cmd/fsd keeps the targets and
# the stamp in step with .goreleaser.yaml.
#
#   scripts/release.sh                 # v0.0.0-snapshot, every target, into dist/
#   scripts/release.sh v0.1.0          # a version (it does not tag or publish)
#   FSD_TARGETS="linux/amd64" scripts/release.sh   # fewer targets
#   FSD_DIST=/tmp/dist scripts/release.sh          # elsewhere than dist/
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:-v0.0.0-snapshot}"
case "$version" in
v[0-9]*) ;;
*) echo "release.sh: the version must look like v1.2.3, not $version" >&2; exit 2 ;;
esac
targets="${FSD_TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}"
dist="${FSD_DIST:-dist}"
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
date=$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags="-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date"

rm -rf "$dist"
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
for target in $targets; do
	goos=${target%/*} goarch=${target#*/}
	name="fsd_${version#v}_${goos}_${goarch}"
	exe=fsd
	[ "$goos" = windows ] && exe=fsd.exe
	start=$SECONDS
	mkdir -p "$dist/$name"
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch \
		go build -trimpath -ldflags "$ldflags" -o "$dist/$name/$exe" ./cmd/fsd
	cp LICENSE README.md CHANGELOG.md "$dist/$name/"
	if [ "$goos" = windows ]; then
		(
			cd "$dist/$name"
			if command -v zip >/dev/null; then
				zip -q -X "$dist/$name.zip" "$exe" LICENSE README.md CHANGELOG.md
			elif command -v python3 >/dev/null; then
				python3 -m zipfile -c "$dist/$name.zip" "$exe" LICENSE README.md CHANGELOG.md
			else
				echo "release.sh: a windows archive needs zip or python3 on PATH" >&2
				exit 1
			fi
		)
	else
		tar -C "$dist/$name" -czf "$dist/$name.tar.gz" "$exe" LICENSE README.md CHANGELOG.md
	fi
	echo "release.sh: $target in $((SECONDS - start))s" >&2
done
shopt -s nullglob
(
	cd "$dist"
	archives=(fsd_*.tar.gz fsd_*.zip)
	[ ${#archives[@]} -gt 0 ] || { echo "release.sh: no archives to checksum" >&2; exit 1; }
	if command -v sha256sum >/dev/null; then
		sha256sum "${archives[@]}"
	else
		shasum -a 256 "${archives[@]}"
	fi >checksums.txt
)

# The binary for this machine, if it was built, must name its version.
native="$(go env GOOS)/$(go env GOARCH)"
for target in $targets; do
	[ "$target" = "$native" ] || continue
	exe="$dist/fsd_${version#v}_${native/\//_}/fsd"
	[ "$(go env GOOS)" = windows ] && exe="$exe.exe"
	got=$("$exe" version)
	case "$got" in
	"fsd $version, commit ${commit:0:12}"*) echo "release.sh: $got" >&2 ;;
	*) echo "release.sh: fsd version printed \"$got\", want \"fsd $version, commit ${commit:0:12}…\"" >&2; exit 1 ;;
	esac
done
echo "release.sh: $(wc -l <"$dist/checksums.txt") archives and checksums.txt in $dist" >&2
