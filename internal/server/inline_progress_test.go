package server

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"
	"time"
)

// A run_prompt with a progress token over stdio hands the reading of
// stdin on before it waits for its progress notifications to be written
// (progress.finish): a peer that writes all its calls before it reads
// stdout fills stdout with them, and a call that held stdin's read while
// its pump's write blocked would keep that peer's writes, and so both,
// blocked for good. Under a 0s reply deadline Settle announces no wait,
// so only the progress path can hand the read on.
func TestAStdioProgressCallReadsOnWhileItsNotificationsWait(t *testing.T) {
	h := newHarness(t, fixture{limits: deadlineLimits(0)})
	inW, outR, served := servePipes(t, h)
	out := bufio.NewReader(outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipelining","version":"1"}}}`)
	if _, err := out.ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	const calls = 2000
	written := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(inW)
		for i := 1; i <= calls; i++ {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"x"},"_meta":{"progressToken":%d}}}`+"\n", i, i)
		}
		written <- w.Flush()
	}()
	select {
	case err := <-written:
		if err != nil {
			t.Fatalf("write the calls: %v", err)
		}
	case <-time.After(30 * time.Second):
		// A hang guard, not a measurement: the server stopped reading.
		outR.Close() // fails the blocked writes, so the session ends
		inW.Close()
		<-served
		t.Fatal("the server stopped reading stdin while stdout was full: a call held the read while its progress notifications could not be written")
	}
	replies := 0
	for replies < calls {
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("read stdout after %d replies: %v", replies, err)
		}
		if bytes.Contains(line, []byte(`"result"`)) {
			replies++
		}
	}
	inW.Close()
	<-served
	outR.Close()
}
