// Command gatewaytest serves the scripted OpenAI-shaped gateway of package
// gatewaytest as a process, for end-to-end tests that are not written in Go
// (test/e2e drives promptforge-mcp-server from Node against it).
//
//	gatewaytest [-api-key KEY] [-script FILE] [-control ADDR] [-stdin-lifeline]
//
// The gateway listens on a free 127.0.0.1 port. Once both it and the
// control API listen, one JSON line goes to stdout:
//
//	{"url":"http://127.0.0.1:PORT/v1","api_key":"KEY","control":"http://127.0.0.1:PORT2"}
//
// Chat replies come from the -script file and from the control API (see
// control.go for the JSON shapes). The process runs until SIGINT or
// SIGTERM, or, with -stdin-lifeline, until its stdin closes: a test
// runner that dies without cleaning up then takes the gateway with it.
//
// It owns only the process around package gatewaytest: flags, the script
// file and the control API. The control API has its own port so that the
// gateway's port serves exactly the gateway contract, and it needs no
// token: it is a test tool, on loopback unless -control says otherwise.
package main
