package mcpserver

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchConn is a Serve over pipes for benchmarks: one request line out,
// lines read until its answer (notifications skipped), nothing checked.
type benchConn struct {
	in  *io.PipeWriter
	out *bufio.Scanner
	n   int
}

func startBench(b *testing.B, e *env) *benchConn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		_ = e.srv.Serve(b.Context(), inR, outW)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	c := &benchConn{in: inW, out: sc}
	c.call(b, `"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// call sends method-and-params (the JSON after `"method":`) and returns the
// answer line.
func (c *benchConn) call(b *testing.B, rest string) string {
	c.n++
	id := fmt.Sprintf(`"id":%d,`, c.n)
	fmt.Fprintf(c.in, `{"jsonrpc":"2.0",%s"method":%s}`+"\n", id, rest)
	for c.out.Scan() {
		if line := c.out.Text(); strings.Contains(line, id) {
			return line
		}
	}
	b.Fatalf("no answer to %s", rest)
	return ""
}

// BenchmarkTasksGet: one tasks/get round trip through the connection, on
// the in-memory task store (the protocol path; a backend adds its read).
func BenchmarkTasksGet(b *testing.B) {
	te := newTaskEnv(b, nil)
	c := startBench(b, te.env)
	c.call(b, `"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hello"},"task":{}}`)
	te.runners.Wait()
	for b.Loop() {
		if line := c.call(b, `"tasks/get","params":{"taskId":"task_0001"}`); !strings.Contains(line, `"completed"`) {
			b.Fatal(line)
		}
	}
	c.in.Close()
}

// BenchmarkPromptSend: a plain prompt_send with the fake turn, against
// which BenchmarkPromptSendTask shows the cost a task adds: create, start
// the runner, claim, commit, finish, and tasks/result.
func BenchmarkPromptSend(b *testing.B) {
	te := newTaskEnv(b, nil)
	c := startBench(b, te.env)
	for b.Loop() {
		if line := c.call(b, `"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hello"}}`); !strings.Contains(line, "echo: hello") {
			b.Fatal(line)
		}
	}
	c.in.Close()
}

// BenchmarkPromptSendTask: the same turn as a task, to its result.
func BenchmarkPromptSendTask(b *testing.B) {
	te := newTaskEnv(b, func(o *TaskOptions) { o.MaxWorking = 1 << 30 })
	c := startBench(b, te.env)
	n := 0
	for b.Loop() {
		n++
		c.call(b, `"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hello"},"task":{}}`)
		if line := c.call(b, fmt.Sprintf(`"tasks/result","params":{"taskId":"task_%04d"}`, n)); !strings.Contains(line, "echo: hello") {
			b.Fatal(line)
		}
	}
	c.in.Close()
	te.runners.Wait()
}

// BenchmarkTaskOfMaximal reads params.task of a tools/call whose arguments
// fill the 16 MiB line, as the task middleware does for every tools/call
// when tasks are on.
func BenchmarkTaskOfMaximal(b *testing.B) {
	params := []byte(`{"name":"tool_call","arguments":{"name":"memory_update","arguments":{"path":"p","content":"` +
		strings.Repeat("a", 16<<20-200) + `"}},"task":{"ttl":1000}}`)
	b.SetBytes(int64(len(params)))
	for b.Loop() {
		if task, err := taskOf(params); err != nil || task == nil {
			b.Fatalf("taskOf = %v, %v", task, err)
		}
	}
}
