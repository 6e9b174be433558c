#!/usr/bin/env bash
# make run: builds the demo client and drives bin/openprogram with it
# (a fresh state dir under .demo/, a token, SQLite, the scripted model).
set -euo pipefail
cd "$(dirname "$0")/.."
(cd cli && GOWORK=off go build -o ../bin/openprogram-demo ./cmd/openprogram-demo)
exec ./bin/openprogram-demo -bin ./bin/openprogram -home ./.demo/state
