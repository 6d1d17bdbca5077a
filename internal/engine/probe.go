package engine

// The probe: a prompt's H1 pass alone, run to learn what the prompt needs
// and what each need binds to, without running the prompt (check, and the
// problem list_prompts shows).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// NeedKind says what a probed need asks for.
type NeedKind uint8

const (
	// NeedModel is models.need, or models.default with a description.
	NeedModel NeedKind = iota + 1
	// NeedTool is tools.need.
	NeedTool
)

func (k NeedKind) String() string {
	if k == NeedTool {
		return "tool"
	}
	return "model"
}

// ProbedNeed is one need the H1 declared and what it bound to.
type ProbedNeed struct {
	Kind        NeedKind
	Alias       string
	Description string
	// Default is set for models.default with a description.
	Default bool
	// Bound is the model id or tool identity ("server/name") the need
	// bound to; "" when Err is set.
	Bound string
	// Err is the binding error (an *Error of KindBinding).
	Err error
}

// ProbeResult is what Probe learned about a prompt.
type ProbeResult struct {
	// Needs are the declared needs in declaration order, up to and
	// including the first one that failed to bind (its error ends the H1).
	Needs []ProbedNeed
	// Unchecked is set when the H1 did something a probe cannot do (a
	// model call, a Lua error on the empty args it is run with): the needs
	// after that point are unknown, which is not a fault of the prompt.
	Unchecked error
	// models is how many models the probe could bind to, for Problem's
	// advice.
	models int
}

// Failed is the first need that did not bind, or nil.
func (p ProbeResult) Failed() *ProbedNeed {
	for i := range p.Needs {
		if p.Needs[i].Err != nil {
			return &p.Needs[i]
		}
	}
	return nil
}

// Problem says, for a caller and an operator, why the prompt cannot bind
// and what to do; "" when every need it could see bound.
func (p ProbeResult) Problem() string {
	n := p.Failed()
	if n == nil {
		return ""
	}
	head := fmt.Sprintf("needs a %s for %q (%s) but ", n.Kind, n.Alias, n.Description)
	var nm *noMatchError
	switch {
	case !errors.As(n.Err, &nm):
		return head + n.Err.Error()
	case n.Kind == NeedTool:
		return head + "no live tool matches; enable one that provides it under [tools] in prompts.toml"
	case p.models == 0:
		return head + `no model is available to bind: the model server could not be reached, lists none, or lists none described; start it, pull or load a model (Ollama: ollama pull llama3.2) and describe it in [models."<id>"] of prompts.toml`
	}
	return head + `no served model matches; describe one in [models."<id>"] of prompts.toml (or relax the need's context/thinking options)`
}

// errProbe is what every model call and tool call made during a probe
// fails with: a probe learns the bindings and never contacts anything.
var errProbe = errors.New("a binding probe makes no model or tool calls")

// Probe runs p's H1 pass alone, with empty args, against cfg's models and
// tools (cfg.Client is replaced by one that refuses every call, and the
// tools by ones that refuse to run), and reports each need it declares and
// what it bound to. A prompt whose H1 declares nothing reports no needs.
// ctx bounds the pass as it bounds a run.
func Probe(ctx context.Context, p *prompt.Prompt, cfg Options) ProbeResult {
	res := ProbeResult{models: len(cfg.Models)}
	if p == nil || len(p.H1) == 0 {
		return res
	}
	cfg.Client = gateway.NewDisabled(errProbe.Error())
	cfg.Observer, cfg.Tracer, cfg.Debug = nil, nil, nil
	live := cfg.Tools
	cfg.Tools = make([]tools.Tool, len(live))
	for i, t := range live {
		cfg.Tools[i] = refusingTool{t.Descriptor()}
	}
	r, err := newRun(p, "", nil, cfg)
	if err != nil {
		res.Unchecked = err
		return res
	}
	r.probed = &res.Needs
	h1 := r.newUnit(frame{}, place{}, ViaH1)
	if _, _, err := h1.runH1(ctx); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Kind == KindBinding && res.Failed() != nil {
			return res
		}
		var ge *gateway.Error
		if errors.As(err, &ge) && ge.Kind == gateway.KindDisabled {
			err = errors.New("the H1 makes a model call, which a probe does not make; needs declared after it are not checked")
		}
		res.Unchecked = err
	}
	return res
}

// noteNeed records a need for Probe; a run records nothing.
func (r *run) noteNeed(n ProbedNeed) {
	if r.probed != nil {
		if n.Err != nil {
			n.Bound = ""
		}
		*r.probed = append(*r.probed, n)
	}
}

// noMatchError is a binding that found nothing to bind to, as opposed to
// an ambiguous or duplicate one: Problem advises describing a model or
// enabling a tool only then.
type noMatchError struct{ msg string }

func (e *noMatchError) Error() string { return e.msg }

func noMatch(msg string) error { return &noMatchError{msg} }

func (mb *modelBinding) id() string {
	if mb == nil {
		return ""
	}
	return mb.model.ID
}

func (b *bindings) toolID(alias string) string {
	if tb, ok := b.tools[alias]; ok {
		return tb.desc.ID.String()
	}
	return ""
}

// refusingTool has a live tool's descriptor, so needs bind as they would in
// a run, and refuses to be called.
type refusingTool struct{ d tools.Descriptor }

func (t refusingTool) Descriptor() tools.Descriptor { return t.d }
func (t refusingTool) Call(context.Context, json.RawMessage) (tools.Result, error) {
	return tools.Result{}, errProbe
}
