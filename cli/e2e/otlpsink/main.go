// Command otlpsink is the test-only OTLP receiver of the end-to-end tests:
// the OpenTelemetry Collector's own OTLP receiver (HTTP and gRPC), writing
// every batch it receives to stdout as one line of OTLP JSON, prefixed by
// its signal ("traces " or "metrics "). Its first line is
// "listening <http host:port> <grpc host:port>".
package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		os.Exit(1)
	}
}

func run() error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	grpcAddr, err := freeAddr()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	emit := func(signal string, b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%s %s\n", signal, b)
		return out.Flush()
	}
	traces, err := consumer.NewTraces(func(_ context.Context, td ptrace.Traces) error {
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			return err
		}
		return emit("traces", b)
	})
	if err != nil {
		return err
	}
	metrics, err := consumer.NewMetrics(func(_ context.Context, md pmetric.Metrics) error {
		b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
		if err != nil {
			return err
		}
		return emit("metrics", b)
	})
	if err != nil {
		return err
	}

	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = grpcAddr
	http := cfg.Protocols.HTTP.GetOrInsertDefault()
	http.ServerConfig.NetAddr.Endpoint = addr
	set := receivertest.NewNopSettings(f.Type())
	ctx := context.Background()
	tr, err := f.CreateTraces(ctx, set, cfg, traces)
	if err != nil {
		return err
	}
	mr, err := f.CreateMetrics(ctx, set, cfg, metrics)
	if err != nil {
		return err
	}
	host := componenttest.NewNopHost()
	for _, c := range []component.Component{tr, mr} {
		if err := c.Start(ctx, host); err != nil {
			return err
		}
	}
	if err := emit("listening", []byte(addr+" "+grpcAddr)); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	// Ends on a signal or when stdin closes (the test went away).
	go func() {
		b := make([]byte, 1)
		for {
			if _, err := os.Stdin.Read(b); err != nil {
				sig <- os.Interrupt
				return
			}
		}
	}()
	<-sig
	tr.Shutdown(ctx)
	return mr.Shutdown(ctx)
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
