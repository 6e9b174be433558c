// Package perf holds the performance benchmarks of `openprogram mcp serve`.
// It has no non-test code: every benchmark lives in a _test.go file (Linux
// only: they read /proc), and a plain `go test ./...` runs none of their
// setup (the binary is built lazily, once, by the first benchmark that needs
// it).
//
// Run them, and summarise with benchstat:
//
//	cd cli
//	GOWORK=off go test -run '^$' -bench . -benchmem -count 6 ./perf/ | tee /tmp/perf.txt
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da /tmp/perf.txt
//
// The binary is built the way `make build` builds it (static: CGO_ENABLED=0,
// -trimpath -ldflags '-s -w'), installed as a copy and evicted from the page cache, so the first
// start reads it from disk. OPENPROGRAM_PERF_BINARY=/path/to/openprogram
// benchmarks that binary instead (an unstripped build lets `perf record`
// attribute the server's samples), installed the same way, and so is the
// floor server of BenchmarkStartupFloor: the file-backed part of a peak RSS
// depends on how the binary's pages sit in the page cache (for one binary,
// 30 MiB after a read from disk, 35 MiB as the linker wrote it), so an A/B
// of two binaries, or ours against the floor, compares like with like. Every state directory is fresh, under
// b.TempDir, with a valid token, an owner principal, SQLite, and the scripted
// model; the server's environment holds nothing but OPENPROGRAM_HOME,
// OPENPROGRAM_MCP_TOKEN, HOME and PATH.
//
// What each benchmark measures:
//
//   - BenchmarkStartInitialize/raw: from just before exec of `openprogram mcp
//     serve` to reading the `initialize` response line, over raw pipes (the
//     request is written to stdin right after exec). The state directory is
//     warm (database created and migrated by a first start). ns/op is the mean
//     of that interval and p50-ms its median; server-CPU-ms is the median CPU
//     time the server had used when the response was read (the sum of its
//     threads' schedstat run times), which does not depend on how busy the
//     machine is. Closing stdin and waiting for the exit are not timed.
//   - BenchmarkStartInitialize/first-run: the same on a state directory whose
//     database does not exist yet (created and migrated on that start).
//   - BenchmarkStartInitialize/sdk: go-sdk's Client.Connect over
//     mcp.CommandTransport (exec, initialize, notifications/initialized).
//   - BenchmarkStartupFloor (make bench-startup): `openprogram mcp serve`
//     and a bare go-sdk server with one tool (testdata/floor, built with
//     this module's go-sdk the same way), run in turn as whole processes:
//     initialize, notifications/initialized and tools/list written at
//     once, stdin closed after the tools/list answer, timed from exec to
//     exit. It reports the medians of each side's wall time, CPU time (the
//     user and system time of rusage) and peak RSS (VmHWM once tools/list is
//     answered; ru_maxrss would report this benchmark's own), and the
//     medians of the pair-by-pair ratios ours / floor: wall-x, CPU-x and
//     peak-RSS-x.
//   - BenchmarkPeakRSS: exec, initialize, notifications/initialized,
//     tools/list; then VmHWM (peak resident set), VmRSS, RssAnon and RssFile
//     of the server from /proc/<pid>/status: peak-RSS-MiB (median over the
//     run's processes), max-peak-RSS-MiB, RSS-MiB, anon-RSS-MiB and
//     file-RSS-MiB. ns/op is exec to the tools/list response.
//   - BenchmarkSessionsList: a store seeded with 10,000 sessions through the
//     Store API (once per test binary run; each run copies it into a fresh
//     state directory), tools/call sessions_list (100 summaries per answer)
//     with 1 or 50 calls in flight, over raw pipes (raw/...: a writer and a
//     reader matching answers by id) and through one go-sdk client session
//     (sdk/...: one goroutine per call). ns/op is wall time per call, first
//     call to last answer (the inverse of throughput); p50-ms and p99-ms are
//     per-call round trips as the client sees them; server-CPU-µs/op and
//     client-CPU-µs/op are CPU time per call of the server and of the
//     benchmark process; peak-RSS-MiB is the server's VmHWM at the end.
//   - BenchmarkTaskTurn: durable MCP tasks (mcp_server.tasks.enabled) on
//     one connection over raw pipes, the scripted model answering at once:
//     plain is a prompt_send answered in the connection; task is the same
//     prompt_send as a task, from the tools/call to the tasks/result answer
//     (the detached runner process started, its host opened, the turn run
//     and committed through the store), with created-p50-ms the tools/call
//     to its CreateTaskResult; get is one tasks/get round trip on a
//     finished task. task minus plain is what a task adds to a turn.
//     plain-after-pause and task-after-pause are plain and task with an
//     untimed 100 ms pause before each call (a client that reads a result
//     before it sends the next prompt); compare them with each other.
//   - BenchmarkCancelPromptSend: a prompt_send (with a progressToken) whose
//     scripted model turn would wait a minute; once its first progress
//     notification arrives, notifications/cancelled is written, and the time
//     until the {"code":0} error response for that id is read is measured
//     over raw pipes (ns/op is the mean, p50-ms and p99-ms the quantiles).
//   - BenchmarkBashCancel: the runtime bash tool (in process) running
//     `sleep 300 & sleep 300 & wait`; from cancelling Execute's context to the
//     moment none of the three processes of its group is alive (gone or a
//     zombie), polled in /proc every 100 µs (ns/op is the mean,
//     cancel-to-gone-ms the median, cancel-to-gone-p99-ms), and to Execute
//     returning (cancel-to-return-ms).
//   - BenchmarkSessionGetRSS (sessionget_test.go): a store holding one
//     session of 60 messages of 1 MiB (60 MiB of content, quotes and line
//     breaks in every line), written through the Store API; each run execs a
//     server, writes three session_get calls for it in one go and reads the
//     three answers; peak-RSS-MiB is the server's VmHWM then (median over
//     the runs), max-peak-RSS-MiB the largest, answer-MiB the size of one
//     answer line.
//   - TestScale (scale_test.go): N servers on one PostgreSQL at once, each
//     sending 5 prompt_send, direct (a role with a CONNECTION LIMIT standing
//     in for max_connections) and through a PgBouncer in transaction pooling
//     it starts; it reports processes started, prompts ok and failed, p50/p99
//     prompt latency, peak server connections and connections held after an
//     idle wait. It is a test: small under `go test` (30 + 30, failing on any
//     failed prompt or held connection), full sizes with `make bench-scale`.
//   - BenchmarkPromptSendHistory (history_test.go): prompt_send of a
//     2,000-byte prompt with model.context_tokens 8000, on a new session
//     each time and on one session seeded through the Store API with 1,000
//     and 10,000 messages (a dozen untimed turns first), on SQLite and,
//     when OPENPROGRAM_TEST_DATABASE_URL is set, PostgreSQL: the turn at
//     10,000 messages should cost what a new session's does.
//   - TestSoakOneSession (soak_test.go): on demand
//     (OPENPROGRAM_SOAK_TURNS=5000), that many prompt_send on one session of
//     one server with the default configuration, logging its RSS every 500
//     turns and its peak at the end; it stops past 1 GiB.
//
// Latencies are measured, never asserted: the targets are compared in the
// benchstat summary, not in tests.
package perf
