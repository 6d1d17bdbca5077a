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

// BenchmarkLuaLoops is Lua doing the work the memory ceiling counts:
// table appends, string keys, concatenation and closures, in one VM, so
// that the cost of counting shows against the interpreter's own.
func BenchmarkLuaLoops(b *testing.B) {
	ctx := context.Background()
	c := chunk(b, "bench", 1, `
local t, h, s = {}, {}, ""
for i = 1, 2000 do
  t[#t + 1] = i
  h["k" .. (i % 100)] = i
  s = "x" .. i
  local f = function() return i end
end
return #t`)
	b.ReportAllocs()
	for b.Loop() {
		vm := New(ctx, Options{Kind: KindSection, Host: &fakeHost{}})
		if _, err := vm.RunChunk(c); err != nil {
			b.Fatal(err)
		}
		vm.Close()
	}
}
