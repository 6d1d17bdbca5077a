package luavm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"

	"github.com/promptforge-go/promptforge/internal/prompt"
)

// Table is JSON-shaped data taken from (or given to) Lua: a dense array part
// (Lua indices 1..len(Arr)) and string-keyed fields. Numeric keys that do
// not extend the array part are kept in Hash under their decimal form, which
// is also how they would appear as JSON object keys.
//
// Data values are nil, bool, float64, string, *Table, and (when decoded from
// JSON) map[string]any and []any.
type Table struct {
	Arr  []any
	Hash map[string]any

	// detached marks a table that an assignment removed from var. Lua may
	// still hold a proxy to it; writes through that proxy no longer count
	// towards var's size.
	detached bool
}

// The size estimate var is bounded by (Limits.MaxVarBytes). It is meant to
// track what the data costs in memory rather than its JSON length, because
// Go holds small containers and scalars at several times their JSON size:
// every container counts containerCost, every element or field entryCost
// plus its key's length (array slots have no key), a string its length and
// any other scalar scalarCost.
const (
	containerCost = 64
	entryCost     = 16
	scalarCost    = 8
)

// maxDataDepth bounds nesting so a self-referencing structure built through
// proxies, or an absurdly deep table, fails cleanly instead of exhausting the
// Go stack.
const maxDataDepth = 200

// FormatNumber renders a Lua number the way PromptForge prints results:
// integral values without a fractional part, other values in their shortest
// round-tripping decimal form, never in exponent notation.
func FormatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// keyOf turns a Lua key into a field name, or reports that the key cannot
// name a JSON field. Integral numbers 1..n+1 are array slots (index>0).
func keyOf(k lua.LValue) (name string, index int, ok bool) {
	switch kv := k.(type) {
	case lua.LString:
		return string(kv), 0, true
	case lua.LNumber:
		f := float64(kv)
		if f >= 1 && f == math.Trunc(f) && f <= math.MaxInt32 {
			return "", int(f), true
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", 0, false
		}
		return FormatNumber(f), 0, true
	}
	return "", 0, false
}

// Get returns the field for a Lua key, or nil.
func (t *Table) get(k lua.LValue) any {
	name, idx, ok := keyOf(k)
	if !ok {
		return nil
	}
	if idx > 0 {
		if idx <= len(t.Arr) {
			return t.Arr[idx-1]
		}
		name = strconv.Itoa(idx)
	}
	if t.Hash == nil {
		return nil
	}
	return t.Hash[name]
}

// set stores v (already converted to data) under a Lua key; v == nil
// deletes. It keeps the array part dense the way a Lua table's border
// would. It returns the change of t's size estimate other than the values'
// own sizes: entries added or removed, and keys gained or lost by entries
// moving between the array part and the fields.
func (t *Table) set(k lua.LValue, v any) int {
	name, idx, ok := keyOf(k)
	if !ok {
		return 0
	}
	if idx > 0 {
		switch {
		case idx <= len(t.Arr) && v != nil:
			t.Arr[idx-1] = v
			return 0
		case idx <= len(t.Arr):
			// A hole: everything after it stops being part of the array.
			delta := -entryCost
			for j := idx; j < len(t.Arr); j++ {
				key := strconv.Itoa(j + 1)
				t.setHash(key, t.Arr[j])
				delta += len(key)
			}
			t.Arr = t.Arr[:idx-1]
			return delta
		case idx == len(t.Arr)+1 && v != nil:
			t.Arr = append(t.Arr, v)
			return entryCost + t.absorb()
		}
		name = strconv.Itoa(idx)
	}
	_, had := t.Hash[name]
	switch {
	case v == nil && had:
		delete(t.Hash, name)
		return -entryCost - len(name)
	case v == nil:
		return 0
	}
	t.setHash(name, v)
	if had {
		return 0
	}
	return entryCost + len(name)
}

func (t *Table) setHash(name string, v any) {
	if t.Hash == nil {
		t.Hash = make(map[string]any)
	}
	t.Hash[name] = v
}

// absorb moves numeric fields that now continue the array into it and
// returns the change of the size estimate (those keys no longer count).
func (t *Table) absorb() int {
	delta := 0
	for len(t.Hash) > 0 {
		name := strconv.Itoa(len(t.Arr) + 1)
		v, ok := t.Hash[name]
		if !ok {
			return delta
		}
		delete(t.Hash, name)
		t.Arr = append(t.Arr, v)
		delta -= len(name)
	}
	return delta
}

// measure returns the size estimate of a data value and its nesting depth
// (a scalar is 0 deep, {} is 1).
func measure(v any) (size, depth int) {
	switch x := v.(type) {
	case nil:
		return 0, 0
	case string:
		return len(x), 0
	case *Table:
		size = containerCost
		for _, e := range x.Arr {
			s, d := measure(e)
			size += entryCost + s
			depth = max(depth, d)
		}
		for k, e := range x.Hash {
			s, d := measure(e)
			size += entryCost + len(k) + s
			depth = max(depth, d)
		}
		return size, depth + 1
	case map[string]any:
		size = containerCost
		for k, e := range x {
			s, d := measure(e)
			size += entryCost + len(k) + s
			depth = max(depth, d)
		}
		return size, depth + 1
	case []any:
		size = containerCost
		for _, e := range x {
			s, d := measure(e)
			size += entryCost + s
			depth = max(depth, d)
		}
		return size, depth + 1
	}
	return scalarCost, 0
}

// detach marks every table in v as removed from var.
func detach(v any) {
	t, ok := v.(*Table)
	if !ok {
		return
	}
	t.detached = true
	for _, e := range t.Arr {
		detach(e)
	}
	for _, e := range t.Hash {
		detach(e)
	}
}

// sortedKeys returns the Hash keys in a stable order.
func (t *Table) sortedKeys() []string {
	keys := make([]string, 0, len(t.Hash))
	for k := range t.Hash {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CloneData deep-copies a data value.
func CloneData(v any) any {
	switch x := v.(type) {
	case *Table:
		out := &Table{}
		if len(x.Arr) > 0 {
			out.Arr = make([]any, len(x.Arr))
			for i, e := range x.Arr {
				out.Arr[i] = CloneData(e)
			}
		}
		if len(x.Hash) > 0 {
			out.Hash = make(map[string]any, len(x.Hash))
			for k, e := range x.Hash {
				out.Hash[k] = CloneData(e)
			}
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = CloneData(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CloneData(e)
		}
		return out
	}
	return v
}

// DataError is a Lua value that is not JSON data. Path names where it sits
// ("var.cfg.fn"); Got is the offending Lua type or key description.
type DataError struct {
	Path string
	Got  string
}

func (e *DataError) Error() string {
	return fmt.Sprintf("%s must be JSON data, got %s", e.Path, e.Got)
}

// converter turns Lua values into data, detecting cycles. It adds up the
// size estimate of what it builds and, when budget is positive, stops once
// that exceeds budget instead of building the rest.
type converter struct {
	vm      *VM
	visited map[*lua.LTable]bool
	size    int
	budget  int
}

// errOverBudget is returned by toData when the value is larger than the
// converter's budget.
var errOverBudget = errors.New("value exceeds the size budget")

func (c *converter) add(n int) error {
	c.size += n
	if c.budget > 0 && c.size > c.budget {
		return errOverBudget
	}
	return nil
}

func childPath(path string, k lua.LValue) string {
	switch kv := k.(type) {
	case lua.LString:
		return path + "." + string(kv)
	case lua.LNumber:
		return path + "[" + FormatNumber(float64(kv)) + "]"
	}
	return path + "[?]"
}

// toData converts a Lua value to data. path names the value in messages.
func (c *converter) toData(v lua.LValue, path string, depth int) (any, error) {
	if depth > maxDataDepth {
		return nil, &DataError{Path: path, Got: "a structure nested too deeply"}
	}
	switch x := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(x), c.add(scalarCost)
	case lua.LNumber:
		return float64(x), c.add(scalarCost)
	case lua.LString:
		return string(x), c.add(len(x))
	case *lua.LTable:
		if err := c.add(containerCost); err != nil {
			return nil, err
		}
		if c.visited[x] {
			return nil, &DataError{Path: path, Got: "a table that contains itself"}
		}
		if c.visited == nil {
			c.visited = make(map[*lua.LTable]bool)
		}
		c.visited[x] = true
		defer delete(c.visited, x)
		out := &Table{}
		n := 0
		for x.RawGetInt(n+1) != lua.LNil {
			n++
		}
		if n > 0 {
			out.Arr = make([]any, n)
			for i := 1; i <= n; i++ {
				if err := c.add(entryCost); err != nil {
					return nil, err
				}
				d, err := c.toData(x.RawGetInt(i), path+"["+strconv.Itoa(i)+"]", depth+1)
				if err != nil {
					return nil, err
				}
				out.Arr[i-1] = d
			}
		}
		var err error
		x.ForEach(func(k, val lua.LValue) {
			if err != nil {
				return
			}
			name, idx, ok := keyOf(k)
			if !ok {
				err = &DataError{Path: path, Got: "a " + k.Type().String() + " key"}
				return
			}
			if idx > 0 && idx <= n {
				return
			}
			if idx > 0 {
				name = strconv.Itoa(idx)
			}
			if e := c.add(entryCost + len(name)); e != nil {
				err = e
				return
			}
			d, e := c.toData(val, childPath(path, k), depth+1)
			if e != nil {
				err = e
				return
			}
			out.setHash(name, d)
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	case *lua.LUserData:
		if ref, ok := x.Value.(*varRef); ok {
			// Measure before copying, so that an assignment such as
			// var.k = var is refused before it doubles var in memory.
			size, d := measure(ref.node)
			if depth+d > maxDataDepth {
				return nil, &DataError{Path: path, Got: "a structure nested too deeply"}
			}
			if err := c.add(size); err != nil {
				return nil, err
			}
			return CloneData(ref.node), nil
		}
	}
	return nil, &DataError{Path: path, Got: v.Type().String()}
}

// ToData converts a Lua value to data (tables become *Table).
func (vm *VM) ToData(v lua.LValue, path string) (any, error) {
	c := converter{vm: vm}
	return c.toData(v, path, 0)
}

// FromData builds a plain Lua value from data.
func (vm *VM) FromData(v any) lua.LValue {
	L := vm.L
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case int:
		return lua.LNumber(x)
	case json.Number:
		f, _ := x.Float64()
		return lua.LNumber(f)
	case string:
		return lua.LString(x)
	case *Table:
		t := L.CreateTable(len(x.Arr), len(x.Hash))
		for i, e := range x.Arr {
			t.RawSetInt(i+1, vm.FromData(e))
		}
		for k, e := range x.Hash {
			t.RawSetString(k, vm.FromData(e))
		}
		return t
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			t.RawSetInt(i+1, vm.FromData(e))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, vm.FromData(e))
		}
		return t
	}
	return lua.LNil
}

// ToPlain converts data to the shapes encoding/json and [prompt.RenderValue]
// know: a *Table becomes []any when it is a pure array and map[string]any
// otherwise (array slots then appear under "1", "2", ...; an empty table is
// an empty object).
func ToPlain(v any) any {
	switch x := v.(type) {
	case *Table:
		if len(x.Hash) == 0 && len(x.Arr) > 0 {
			out := make([]any, len(x.Arr))
			for i, e := range x.Arr {
				out[i] = ToPlain(e)
			}
			return out
		}
		out := make(map[string]any, len(x.Arr)+len(x.Hash))
		for i, e := range x.Arr {
			out[strconv.Itoa(i+1)] = ToPlain(e)
		}
		for k, e := range x.Hash {
			out[k] = ToPlain(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ToPlain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = ToPlain(e)
		}
		return out
	}
	return v
}

// RenderData renders data the way templates and results show it: strings
// verbatim, numbers in natural form, booleans as words, containers as
// compact JSON with sorted keys.
func RenderData(v any) (string, error) {
	return prompt.RenderValue(ToPlain(v))
}
