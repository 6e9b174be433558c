#!/usr/bin/env bash
# make run: builds the demo client and drives bin/openprogram with it
# (a fresh state dir under .demo/, a token, SQLite, the scripted model).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== building bin/openprogram-demo (the demo MCP client; seconds once bin/openprogram is built)"
(cd cli && GOWORK=off go build -o ../bin/openprogram-demo ./cmd/openprogram-demo)
echo "== running the demo: a fresh state dir in .demo/state, SQLite, the scripted model"
exec ./bin/openprogram-demo -bin ./bin/openprogram -home ./.demo/state
