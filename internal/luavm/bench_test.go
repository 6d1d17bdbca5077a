package luavm

import (
	"context"
	"testing"
)

func BenchmarkNewVM(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		vm := New(ctx, Options{Kind: KindSection, Host: &fakeHost{}})
		vm.Close()
	}
}

func BenchmarkRunChunk(b *testing.B) {
	ctx := context.Background()
	c := chunk(b, "bench", 1, `return "hello " .. args`)
	b.ReportAllocs()
	for b.Loop() {
		vm := New(ctx, Options{Kind: KindSection, Host: &fakeHost{}, Args: "world"})
		if _, err := vm.RunChunk(c); err != nil {
			b.Fatal(err)
		}
		vm.Close()
	}
}
