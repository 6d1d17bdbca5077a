package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// shutdownGrace bounds how long stopping waits for control requests in
// flight (a gate long-poll ends when its client goes away).
const shutdownGrace = 5 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// ready is the line announcing where everything listens.
type ready struct {
	URL     string `json:"url"`
	APIKey  string `json:"api_key"`
	Control string `json:"control"`
}

// run serves until ctx ends (or stdin closes, with -stdin-lifeline) and
// returns the exit code: 0 after a clean stop, 1 when it could not start,
// 2 for a bad command line.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gatewaytest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiKey := fs.String("api-key", "", "the bearer token the gateway accepts (default: random, printed on the ready line)")
	scriptPath := fs.String("script", "", "a JSON file with the initial models, queued replies and default reply")
	controlAddr := fs.String("control", "127.0.0.1:0", "listen address of the control API")
	lifeline := fs.Bool("stdin-lifeline", false, "exit when stdin reaches end of file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gatewaytest: unexpected argument %q\n", fs.Arg(0))
		return 2
	}

	var sc script
	if *scriptPath != "" {
		b, err := os.ReadFile(*scriptPath)
		if err != nil {
			fmt.Fprintf(stderr, "gatewaytest: read the script: %v\n", err)
			return 1
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			fmt.Fprintf(stderr, "gatewaytest: parse the script %s: %v (keys: models, replies, respond)\n", *scriptPath, err)
			return 1
		}
	}

	gw, err := gatewaytest.NewServer(gatewaytest.ServerOptions{
		APIKey: *apiKey,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(stderr, "gatewaytest: "+format+"\n", args...)
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "gatewaytest: %v\n", err)
		return 1
	}
	defer gw.Close()
	ctl := newControl(gw)
	if err := ctl.apply(sc); err != nil {
		fmt.Fprintf(stderr, "gatewaytest: the script %s: %v\n", *scriptPath, err)
		return 1
	}

	ln, err := net.Listen("tcp", *controlAddr)
	if err != nil {
		fmt.Fprintf(stderr, "gatewaytest: listen for the control API on %s: %v\n", *controlAddr, err)
		return 1
	}
	srv := &http.Server{Handler: ctl.handler(), ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(ctl.stop)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	line, err := json.Marshal(ready{URL: gw.URL(), APIKey: gw.APIKey(), Control: "http://" + ln.Addr().String()})
	if err == nil {
		_, err = fmt.Fprintf(stdout, "%s\n", line)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatewaytest: announce the addresses: %v\n", err)
		_ = srv.Close()
		<-served
		return 1
	}

	stdinClosed := make(chan struct{})
	if *lifeline {
		// The copy ends at EOF or a read error; either way the parent is
		// gone. It is not waited for: a blocked read on a stdin that never
		// closes cannot be interrupted, and the process is about to exit.
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			close(stdinClosed)
		}()
	}

	code := 0
	select {
	case <-ctx.Done():
	case <-stdinClosed:
	case err := <-served:
		fmt.Fprintf(stderr, "gatewaytest: the control API stopped: %v\n", err)
		return 1
	}
	// Drop held gateway requests first, so nothing in flight waits on a
	// gate that will never open, then stop the control API.
	gw.Close()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		ctl.stop()
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "gatewaytest: the control API: %v\n", err)
		code = 1
	}
	return code
}
