module github.com/promptforge-go/promptforge

go 1.26.0

require github.com/yuin/gopher-lua v1.1.2

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	github.com/pelletier/go-toml/v2 v2.4.3 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/yuin/goldmark v1.8.7 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
