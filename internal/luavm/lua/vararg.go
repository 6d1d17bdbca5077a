package lua

// promptforge: this file is new (see doc.go).

// setArgN sets the n field of the arg table a vararg function that does
// not use ... receives (Lua 5.0's compatibility varargs, CompatVarArg).
// Its hash and key order are made for that one key: RawSetString would
// make gopher-lua's default 32-entry hash, and the main function of every
// chunk is such a function, so each block a section runs built one (about
// 2.5 KB, most of what running a small chunk allocated). The meter is
// charged as RawSetString charges.
func (tb *LTable) setArgN(n LValue) {
	if tb.strdict == nil {
		tb.strdict = make(map[string]LValue, 1)
	}
	if tb.keys == nil {
		tb.keys = make([]LValue, 0, 1)
		tb.k2i = make(map[LValue]int, 1)
	}
	tb.RawSetString("n", n)
}
