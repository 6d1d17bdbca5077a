package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/luavm"
	"github.com/promptforge-go/promptforge/internal/match"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// bindings are the run's H1 declarations: tool and model aliases, the
// always set, the default model. They are written only by the H1 pass and
// read by every section afterwards.
type bindings struct {
	r *run

	toolOrder []string
	tools     map[string]*toolBinding
	byIndex   map[int]string // tool index → alias
	always    []string

	// models are the declared model bindings in declaration order, found
	// by model(alias). A slice, not a map: a run declares a handful at
	// most, and the map's group (about 200 bytes) was held by every run
	// for its whole wait at the gateway.
	models   []*modelBinding
	defModel string

	// recorded is the first H1 resolution error: it fails the run after
	// the block that caused it even when the block caught it.
	recorded error

	toolIdxOnce sync.Once
	toolIdx     match.Index
	toolIdxErr  error
	toolCache   map[string]match.Decision

	nearDup []match.Pair
}

type toolBinding struct {
	alias, description string
	override           *string // from need, replaced by always's override
	always             bool
	tool               tools.Tool
	desc               tools.Descriptor
	index              int
}

type modelBinding struct {
	alias, description string
	model              gateway.Model
	opts               luavm.ModelOpts
}

func (b *bindings) init(r *run) {
	b.r = r
}

// model is the binding declared as alias, or nil.
func (b *bindings) model(alias string) *modelBinding {
	for _, mb := range b.models {
		if mb.alias == alias {
			return mb
		}
	}
	return nil
}

func (b *bindings) ranker() match.Ranker {
	if b.r.cfg.Ranker != nil {
		return b.r.cfg.Ranker
	}
	return match.NewLexical()
}

func (b *bindings) toolPolicy() match.Policy {
	if b.r.cfg.ToolPolicy != nil {
		return *b.r.cfg.ToolPolicy
	}
	return match.LexicalPolicy()
}

func (b *bindings) modelPolicy() match.Policy {
	if b.r.cfg.ModelPolicy != nil {
		return *b.r.cfg.ModelPolicy
	}
	return match.LexicalModelPolicy()
}

func bindingErr(format string, args ...any) *Error {
	return &Error{Kind: KindBinding, Err: fmt.Errorf(format, args...)}
}

// record keeps the first resolution error and returns err for raising.
func (b *bindings) record(err error) error {
	if b.recorded == nil {
		b.recorded = err
	}
	return err
}

// schemaParams lists the property names of a JSON schema object.
func schemaParams(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	return out
}

func (b *bindings) toolIndex(ctx context.Context) (match.Index, error) {
	b.toolIdxOnce.Do(func() {
		docs := make([]match.Doc, len(b.r.cfg.Tools))
		for i, t := range b.r.cfg.Tools {
			d := t.Descriptor()
			docs[i] = match.ToolDoc(d.ID.Server, d.ID.Name, d.Description, schemaParams(d.Parameters))
		}
		b.toolIdx, b.toolIdxErr = b.ranker().Index(ctx, docs)
	})
	return b.toolIdx, b.toolIdxErr
}

func quoteIDs(ids []string) string { return "[" + strings.Join(ids, ", ") + "]" }

func (b *bindings) needTool(ctx context.Context, alias, description string, override *string) (luavm.ToolHandle, error) {
	if _, dup := b.tools[alias]; dup {
		return luavm.ToolHandle{}, b.record(bindingErr("tool alias %q was declared more than once", alias))
	}
	dec, ok := b.toolCache[description]
	if !ok {
		if len(b.r.cfg.Tools) == 0 {
			dec = match.Decision{Outcome: match.Absent}
		} else {
			idx, err := b.toolIndex(ctx)
			if err != nil {
				return luavm.ToolHandle{}, b.record(bindingErr("tool picker failed to index the live tools for capability %q: %w", description, err))
			}
			dec, err = match.Resolve(ctx, idx, b.toolPolicy(), description)
			if err != nil {
				return luavm.ToolHandle{}, b.record(bindingErr("tool picker query failed for capability %q: %w", description, err))
			}
		}
		if b.toolCache == nil {
			b.toolCache = map[string]match.Decision{}
		}
		b.toolCache[description] = dec
	}
	ids := func() []string {
		out := make([]string, len(dec.Members))
		for i, m := range dec.Members {
			out[i] = b.r.cfg.Tools[m].Descriptor().ID.String()
		}
		return out
	}
	switch dec.Outcome {
	case match.Bind:
	case match.Duplicate:
		return luavm.ToolHandle{}, b.record(bindingErr("duplicate tools match capability %q: %s; make the description name one of them", description, quoteIDs(ids())))
	case match.Ambiguous:
		return luavm.ToolHandle{}, b.record(bindingErr("ambiguous tools match capability %q: %s; describe the capability more precisely", description, quoteIDs(ids())))
	default:
		return luavm.ToolHandle{}, b.record(&Error{Kind: KindBinding, Err: noMatch(fmt.Sprintf("no tool matches capability %q; enable a tool that provides it or describe it the way the tool does", description))})
	}
	index := dec.Members[0]
	if other, taken := b.byIndex[index]; taken {
		id := b.r.cfg.Tools[index].Descriptor().ID
		return luavm.ToolHandle{}, b.record(bindingErr("tool identity %s was selected by both aliases %q and %q", id, other, alias))
	}
	t := b.r.cfg.Tools[index]
	tb := &toolBinding{alias: alias, description: description, override: override, tool: t, desc: t.Descriptor(), index: index}
	if b.tools == nil {
		// Made with the first tool, as byIndex is: a run that declares
		// none (prose alone) holds no map through its wait.
		b.tools = map[string]*toolBinding{}
	}
	b.tools[alias] = tb
	b.toolOrder = append(b.toolOrder, alias)
	if b.byIndex == nil {
		b.byIndex = map[int]string{}
	}
	b.byIndex[index] = alias
	return tb.handle(true), nil
}

func (tb *toolBinding) handle(withParams bool) luavm.ToolHandle {
	h := luavm.ToolHandle{Alias: tb.alias, Description: tb.description, WireName: tb.desc.WireName}
	if withParams {
		h.Parameters = tb.desc.Parameters
	}
	return h
}

func (b *bindings) alwaysTool(alias string, override *string) error {
	tb, ok := b.tools[alias]
	if !ok {
		return luavm.Scriptf("tools.always alias %q was not declared by tools.need", alias)
	}
	if tb.always {
		return luavm.Scriptf("tools.always alias %q was recorded more than once", alias)
	}
	tb.always = true
	if override != nil {
		tb.override = override
	}
	b.always = append(b.always, alias)
	return nil
}

func (b *bindings) needModel(ctx context.Context, alias, description string, opts *luavm.ModelOpts) (*modelBinding, error) {
	if b.model(alias) != nil {
		return nil, b.record(bindingErr("model alias %q was declared more than once", alias))
	}
	var o luavm.ModelOpts
	if opts != nil {
		o = *opts
	}
	m, err := b.pickModel(ctx, description, o)
	if errors.Is(err, errNoModel) && b.refreshModels(ctx) {
		m, err = b.pickModel(ctx, description, o)
	}
	if errors.Is(err, errNoModel) {
		err = b.noModel(description)
	}
	if err != nil {
		return nil, b.record(err)
	}
	mb := &modelBinding{alias: alias, description: description, model: m, opts: o}
	b.models = append(b.models, mb)
	return mb, nil
}

// errNoModel is pickModel's "nothing matches": the caller may refresh the
// list and pick again before it words the failure (noModel).
var errNoModel = errors.New("no model matches")

// pickModel binds description against the run's model list.
func (b *bindings) pickModel(ctx context.Context, description string, o luavm.ModelOpts) (gateway.Model, error) {
	all := b.r.models.Models
	// Only the lexical ranker's picks are remembered (see ModelPicks).
	picks := b.r.cfg.ModelPicks
	if b.r.cfg.Ranker != nil {
		picks = nil
	}
	key := keyOf(description, o)
	if i, ok := picks.lookup(all, key); ok {
		return all[i], nil
	}
	var cands []gateway.Model
	var from []int // cands[i] is all[from[i]]
	for i, m := range all {
		if !key.admits(m) {
			continue
		}
		cands = append(cands, m)
		from = append(from, i)
	}
	if len(cands) == 0 {
		return gateway.Model{}, errNoModel
	}
	docs := make([]match.Doc, len(cands))
	for i, m := range cands {
		docs[i] = match.ModelDoc(m.ID, m.Description)
	}
	idx, err := b.ranker().Index(ctx, docs)
	if err != nil {
		return gateway.Model{}, bindingErr("model picker failed to index the catalog for capability %q: %w", description, err)
	}
	dec, err := match.Resolve(ctx, idx, b.modelPolicy(), description)
	if err != nil {
		return gateway.Model{}, bindingErr("model picker query failed for capability %q: %w", description, err)
	}
	ids := make([]string, len(dec.Members))
	for i, m := range dec.Members {
		ids[i] = cands[m].ID
	}
	switch dec.Outcome {
	case match.Bind:
		picks.remember(all, key, from[dec.Members[0]])
		return cands[dec.Members[0]], nil
	case match.Ambiguous:
		return gateway.Model{}, bindingErr("ambiguous models match capability %q: %s; describe the model more precisely", description, quoteIDs(ids))
	case match.Duplicate:
		return gateway.Model{}, bindingErr("duplicate models match capability %q: %s", description, quoteIDs(ids))
	default:
		return gateway.Model{}, errNoModel
	}
}

// refreshModels swaps the run's model list for a newer one after a
// binding miss, at most once per run: the list may have been fetched
// before the model server was up or before a model was pulled. It reports
// whether the list changed, so binding again may find something.
func (b *bindings) refreshModels(ctx context.Context) bool {
	r := b.r
	if r.cfg.ModelSet == nil || r.modelsRetried {
		return false
	}
	r.modelsRetried = true
	var changed bool
	r.models, changed = r.cfg.ModelSet.AfterMiss(ctx, r.models)
	return changed
}

// noModel words a need that nothing in the run's list matches. When the
// list is empty because the model server could not be reached or lists
// nothing, that is the cause, not a capability mismatch.
func (b *bindings) noModel(description string) error {
	problem := b.r.models.Problem()
	switch {
	case problem != nil && len(b.r.models.Models) == 0:
		return bindingErr("cannot bind a model for capability %q: %w", description, problem)
	case problem != nil:
		return bindingErr("no model matches capability %q among the %d models last listed; check the need's context/thinking options (the list may be out of date: %w)", description, len(b.r.models.Models), problem)
	}
	msg := fmt.Sprintf("no model matches capability %q; check the gateway's catalog and the need's context/thinking options", description)
	for _, u := range gateway.Misnamed(b.r.models.Unmatched) {
		msg += "; " + u.Problem()
	}
	return &Error{Kind: KindBinding, Err: noMatch(msg)}
}

func (b *bindings) defaultModel(ctx context.Context, alias string, description *string, opts *luavm.ModelOpts) (*modelBinding, error) {
	if b.defModel != "" {
		return nil, luavm.Scriptf("models.default may be called at most once per prompt")
	}
	if description != nil {
		mb, err := b.needModel(ctx, alias, *description, opts)
		if err != nil {
			return nil, err
		}
		b.defModel = alias
		return mb, nil
	}
	mb := b.model(alias)
	if mb == nil {
		return nil, luavm.Scriptf("models.default alias %q was not declared by models.need", alias)
	}
	b.defModel = alias
	return mb, nil
}

func (mb *modelBinding) handle() luavm.ModelHandle {
	d := string(mb.model.Dialect)
	if d == "" {
		d = string(gateway.DialectOpenAI)
	}
	return luavm.ModelHandle{
		Alias: mb.alias, ModelID: mb.model.ID, Description: mb.description, Context: mb.model.Context,
		Thinking: mb.opts.Thinking, Temperature: mb.opts.Temperature, MaxTokens: mb.opts.MaxTokens, Dialect: d,
	}
}

// aliasHandles are the alias globals installed into every section VM.
func (b *bindings) aliasHandles() ([]luavm.ToolHandle, []luavm.ModelHandle) {
	ts := make([]luavm.ToolHandle, 0, len(b.toolOrder))
	for _, a := range b.toolOrder {
		ts = append(ts, b.tools[a].handle(false))
	}
	ms := make([]luavm.ModelHandle, 0, len(b.models))
	for _, mb := range b.models {
		ms = append(ms, mb.handle())
	}
	return ts, ms
}

// analyseNearDuplicates finds the pairs of H1-bound tools a model could not
// tell apart (prompt-language §6.4); a section may not scope both members of
// a pair.
func (b *bindings) analyseNearDuplicates(ctx context.Context) error {
	if len(b.toolOrder) < 2 {
		return nil
	}
	idx, err := b.toolIndex(ctx)
	if err != nil {
		return bindingErr("near-duplicate analysis could not index the live tools: %w", err)
	}
	members := make([]int, 0, len(b.toolOrder))
	for _, a := range b.toolOrder {
		members = append(members, b.tools[a].index)
	}
	pairs, err := match.NearDuplicates(idx, b.toolPolicy(), members)
	if err != nil {
		return bindingErr("near-duplicate analysis failed: %w", err)
	}
	b.nearDup = pairs
	return nil
}

// checkScope fails when two near-duplicate tools share one scope.
func (b *bindings) checkScope(scope []string) error {
	if len(b.nearDup) == 0 {
		return nil
	}
	in := make(map[string]bool, len(scope))
	for _, a := range scope {
		in[a] = true
	}
	for _, p := range b.nearDup {
		a, c := b.byIndex[p.A], b.byIndex[p.B]
		if in[a] && in[c] {
			first, second := b.tools[a], b.tools[c]
			if indexOf(scope, c) < indexOf(scope, a) {
				first, second = second, first
			}
			return bindingErr("tool aliases %q (%s) and %q (%s) are near-duplicates with similarity %.3f; put them in different sections or declare only one",
				first.alias, first.desc.ID, second.alias, second.desc.ID, p.Similarity)
		}
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
