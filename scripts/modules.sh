#!/usr/bin/env bash
# Prints the modules that go.work uses, one relative path per line, in go.work order.
set -euo pipefail
cd "$(dirname "$0")/.."
awk '
  /^use[ \t]*\(/ { inblock = 1; next }
  inblock && /^\)/ { inblock = 0; next }
  inblock { print $1; next }
  /^use[ \t]+[^(]/ { print $2 }
' go.work | sed -e 's|^\./||' -e 's|/$||'
