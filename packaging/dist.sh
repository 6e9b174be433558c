#!/usr/bin/env bash
# The release's packaging steps, one subcommand each. `make dist` runs them for
# every platform; the end-to-end tests (cli/e2e/dist/dist_test.go) run them for the
# host platform, so both build the same files the same way.
#
#   dist.sh extras  BIN OUT                        man page and completions, from a host binary
#   dist.sh archive BIN OS ARCH EXTRAS OUT         OUT/openprogram_OS_ARCH.tar.gz (windows: .zip)
#   dist.sh mcpb    BIN OS ARCH SEMVER OUT         OUT/openprogram_OS_ARCH.mcpb (mcpb pack; one per platform)
#   dist.sh sbom    BIN OS ARCH VERSION OUT        OUT/openprogram_OS_ARCH.cdx.json (CycloneDX)
#   dist.sh server-json SEMVER TAG OUT             OUT/server.json for the MCP registry
#   dist.sh sums    OUT                            OUT/SHA256SUMS over every artifact
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
packaging="$root/packaging"
# The project's release download URL; server.json points the registry at it.
releases="https://github.com/openprogram/openprogram/releases/download"
# cyclonedx-gomod, pinned like the Makefile's other tools.
CYCLONEDX="${CYCLONEDX:-github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0}"

say() { echo "== $*" >&2; }
die() { echo "dist.sh: $*" >&2; exit 1; }

# semver checks what goes into manifest.json and server.json: both want
# MAJOR.MINOR.PATCH[-PRERELEASE], and the value lands in JSON unescaped.
semver() {
  [[ "$1" =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
    die "version \"$1\" is not MAJOR.MINOR.PATCH[-PRERELEASE]"
}
platform() {
  case "$1/$2" in
    linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64 | windows/amd64 | windows/arm64) ;;
    *) die "unsupported platform $1/$2 (linux, darwin and windows, amd64 and arm64)" ;;
  esac
}
# exe is the program's file name on OS; mcpb_platform is the OS as an MCP
# bundle's compatibility.platforms names it (Node's process.platform).
exe() { if [ "$1" = windows ]; then echo openprogram.exe; else echo openprogram; fi; }
mcpb_platform() { if [ "$1" = windows ]; then echo win32; else echo "$1"; fi; }
sha256() { if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }

extras() { # BIN OUT
  local bin="$1" out="$2"
  say "man page and shell completions from $bin"
  mkdir -p "$out/man" "$out/completions"
  "$bin" man >"$out/man/openprogram.1"
  "$bin" completion bash >"$out/completions/openprogram.bash"
  "$bin" completion zsh >"$out/completions/_openprogram"
  "$bin" completion fish >"$out/completions/openprogram.fish"
  "$bin" completion powershell >"$out/completions/openprogram.ps1"
}

archive() { # BIN OS ARCH EXTRAS OUT
  local bin="$1" os="$2" arch="$3" extras="$4" out="$5"
  platform "$os" "$arch"
  local name="openprogram_${os}_${arch}" stage
  out="$(cd "$out" && pwd)"
  stage="$(mktemp -d "$out/.stage-archive-XXXXXX")"
  mkdir -p "$stage/$name"
  install -m 0755 "$bin" "$stage/$name/$(exe "$os")"
  cp "$root/README.md" "$root/LICENSE" "$stage/$name/"
  cp -R "$root/docs" "$extras/man" "$extras/completions" "$stage/$name/"
  if [ "$os" = windows ]; then
    # Windows users open zip archives (Explorer, Expand-Archive).
    say "archive $name.zip"
    (cd "$stage" && zip -q -r -X "$out/$name.zip.tmp" "$name")
    mv "$out/$name.zip.tmp" "$out/$name.zip"
  else
    say "archive $name.tar.gz"
    tar -C "$stage" -czf "$out/$name.tar.gz.tmp" "$name"
    mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
  fi
  rm -rf "$stage"
}

mcpb() { # BIN OS ARCH SEMVER OUT
  local bin="$1" os="$2" arch="$3" version="$4" out="$5"
  platform "$os" "$arch"
  semver "$version"
  local cli="$packaging/node_modules/.bin/mcpb"
  [ -x "$cli" ] || die "$cli is missing: run npm ci --ignore-scripts in packaging/"
  local name="openprogram_${os}_${arch}" stage
  say "bundle $name.mcpb ($version)"
  stage="$(mktemp -d "$out/.stage-mcpb-XXXXXX")"
  mkdir -p "$stage/server"
  install -m 0755 "$bin" "$stage/server/$(exe "$os")"
  cp "$root/LICENSE" "$stage/"
  sed -e "s/@VERSION@/$version/" -e "s/@PLATFORM@/$(mcpb_platform "$os")/" -e "s/@EXE@/$(exe "$os")/g" \
    "$packaging/manifest.json.in" >"$stage/manifest.json"
  "$cli" validate "$stage/manifest.json" >&2
  "$cli" pack "$stage" "$out/$name.mcpb" >&2
  rm -rf "$stage"
}

sbom() { # BIN OS ARCH VERSION OUT
  local bin="$1" os="$2" arch="$3" version="$4" out="$5"
  platform "$os" "$arch"
  local name="openprogram_${os}_${arch}"
  say "SBOM $name.cdx.json"
  # bin mode reads the module list Go embeds in the binary: exactly what was linked.
  (cd "$root/cli" && GOWORK=off go run "$CYCLONEDX" bin -json -output "$out/$name.cdx.json" -version "$version" "$bin") >&2
}

server_json() { # SEMVER TAG OUT
  local version="$1" tag="$2" out="$3" packages="" f sum
  semver "$version"
  [[ "$tag" =~ ^[0-9A-Za-z._-]+$ ]] || die "release tag \"$tag\" has characters a URL path segment cannot carry"
  shopt -s nullglob
  local bundles=("$out"/openprogram_*.mcpb)
  [ ${#bundles[@]} -gt 0 ] || die "no openprogram_*.mcpb in $out: build the bundles first"
  say "server.json ($version, ${#bundles[@]} bundles)"
  for f in "${bundles[@]}"; do
    sum="$(sha256 "$f" | cut -d' ' -f1)"
    [ -n "$packages" ] && packages+=$',\n'
    packages+="    {\"registryType\": \"mcpb\", \"identifier\": \"$releases/$tag/$(basename "$f")\", \"version\": \"$version\", \"fileSha256\": \"$sum\", \"transport\": {\"type\": \"stdio\"}}"
  done
  local tmpl
  tmpl="$(<"$packaging/server.json.in")"
  tmpl="${tmpl/@VERSION@/$version}"
  printf '%s\n' "${tmpl/@PACKAGES@/$packages}" >"$out/server.json.tmp"
  mv "$out/server.json.tmp" "$out/server.json"
}

sums() { # OUT
  local out="$1"
  say "SHA256SUMS"
  (cd "$out" && shopt -s nullglob && sha256 *.tar.gz *.zip *.mcpb *.cdx.json server.json >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
}

cmd="${1:-}"
shift || true
case "$cmd" in
  extras) [ $# -eq 2 ] || die "usage: dist.sh extras BIN OUT"; extras "$@" ;;
  archive) [ $# -eq 5 ] || die "usage: dist.sh archive BIN OS ARCH EXTRAS OUT"; archive "$@" ;;
  mcpb) [ $# -eq 5 ] || die "usage: dist.sh mcpb BIN OS ARCH SEMVER OUT"; mcpb "$@" ;;
  sbom) [ $# -eq 5 ] || die "usage: dist.sh sbom BIN OS ARCH VERSION OUT"; sbom "$@" ;;
  server-json) [ $# -eq 3 ] || die "usage: dist.sh server-json SEMVER TAG OUT"; server_json "$@" ;;
  sums) [ $# -eq 1 ] || die "usage: dist.sh sums OUT"; sums "$@" ;;
  *) die "usage: dist.sh extras|archive|mcpb|sbom|server-json|sums ... (see the top of this file)" ;;
esac
