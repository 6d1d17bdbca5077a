package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/redact"
)

// preflight is check's online half: it fetches the model list the way
// serve does, prints which models binding may use (and which it leaves
// out, and why), then probes every healthy prompt's H1 (engine.Probe) and
// prints each need with the model or tool it binds to. It fails when the
// model server cannot be used as configured, or when a need binds to
// nothing; an H1 a probe cannot run to the end (it calls a model, say) is
// listed as not checked, which is not a failure.
func preflight(ctx context.Context, plan envPlan, cat *catalog.Catalog, w io.Writer) error {
	gc := *plan.gateway
	client, err := gateway.New(gc)
	if err != nil {
		return fmt.Errorf("build the gateway client: %w", err)
	}
	defer client.CloseIdleConnections()
	served, err := client.Models(ctx, plan.overrides)
	if err != nil {
		return modelServerFault(client.BaseURL(), err)
	}
	fmt.Fprintf(w, "\nmodel server %s: %d model(s) for binding\n", redact.RawURL(client.BaseURL()), len(served.Models))
	for _, m := range served.Models {
		fmt.Fprintf(w, "  %s: %s\n", m.ID, m.Description)
	}
	if err := preflightEmbeddings(ctx, plan, w); err != nil {
		return err
	}
	// An id [models] describes that the server does not list is usual
	// (the example describes the common Ollama models, of which a user
	// pulls one or two): one line names them all.
	for _, s := range served.Skipped {
		fmt.Fprintf(w, "  left out: %s: %s\n", s.ID, s.Reason)
	}
	for _, u := range gateway.Misnamed(served.Unmatched) {
		fmt.Fprintf(w, "  misnamed: %s\n", u.Problem())
	}
	if unserved := unservedIDs(served.Unmatched); unserved != "" {
		fmt.Fprintf(w, "  described in [models] but not served: %s\n", unserved)
	}

	// The live tools as serve builds them (web_fetch, web_search), so
	// tools.need binds as it would; the model list is the one above. The
	// built environment fetches the list again, which a preflight can
	// afford, and contacts nothing else.
	env, err := plan.build(ctx, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer env.Close()
	rank, err := plan.ranking(nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer rank.Close()

	fmt.Fprintln(w, "\nprompt needs:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROMPT\tNEED\tBINDS TO")
	var unbound []string
	for _, e := range cat.All() {
		p := e.Prompt()
		if e.Broken() || p == nil {
			continue
		}
		res := engine.Probe(ctx, p, engine.Options{Models: served.Models, Tools: env.tools, Ranking: rank.run})
		if problem := res.Problem(); problem != "" {
			unbound = append(unbound, e.Name()+": "+problem)
		}
		for _, n := range res.Needs {
			bound := n.Bound
			if n.Err != nil {
				bound = "NOTHING: " + oneLine(n.Err.Error())
			}
			fmt.Fprintf(tw, "  %s\t%s %q\t%s\n", e.Name(), n.Kind, n.Alias, bound)
		}
		switch {
		case res.Unchecked != nil:
			fmt.Fprintf(tw, "  %s\t-\tcannot check statically: %s\n", e.Name(), oneLine(res.Unchecked.Error()))
		case len(res.Needs) == 0:
			fmt.Fprintf(tw, "  %s\t-\tno model or tool needs\n", e.Name())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(unbound) > 0 {
		return fmt.Errorf("%d prompt(s) have a need that binds to nothing:\n  %s", len(unbound), strings.Join(unbound, "\n  "))
	}
	return nil
}

// modelServerFault words a failed GET /models as what to fix.
func modelServerFault(base string, err error) error {
	url := redact.RawURL(base)
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		return fmt.Errorf("fetch the model list from %s: %w", url, err)
	}
	switch {
	case ge.Kind == gateway.KindStatus && ge.Status == http.StatusNotFound:
		hint := "[gateway].url must be the OpenAI API root, which ends in /v1 for Ollama, vLLM, llama.cpp, LiteLLM and OpenAI"
		if !strings.HasSuffix(strings.TrimRight(base, "/"), "/v1") {
			hint = "[gateway].url lacks /v1: set it to " + strings.TrimRight(url, "/") + "/v1 (the OpenAI API root)"
		}
		return fmt.Errorf("the model server at %s answered 404 Not Found for GET /models; %s: %w", url, hint, err)
	case ge.Kind == gateway.KindStatus && (ge.Status == http.StatusUnauthorized || ge.Status == http.StatusForbidden):
		return fmt.Errorf("the model server at %s refused the API key (%d): set [gateway].api_key to a key it accepts (examples/prompts.toml reads it from PROMPTFORGE_GATEWAY_API_KEY): %w", url, ge.Status, err)
	case ge.Kind == gateway.KindTransport:
		return fmt.Errorf("the model server at %s is not reachable: start it (or fix [gateway].url), or run check --offline to skip this: %w", url, err)
	}
	return fmt.Errorf("fetch the model list from %s: %w", url, err)
}

// oneLine keeps a Lua error with a traceback to its first line.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// preflightEmbeddings embeds one text with [retrieval]'s model, when one
// is set: serve would fall back to the lexical ranker if it could not, so
// check is where a model that is not pulled, or is not an embedding
// model, is caught.
func preflightEmbeddings(ctx context.Context, plan envPlan, w io.Writer) error {
	if plan.retrieval.model == "" {
		return nil
	}
	gc := *plan.gateway
	gc.EmbeddingsTimeout = plan.retrieval.timeout
	client, err := gateway.New(gc)
	if err != nil {
		return fmt.Errorf("build the embeddings client: %w", err)
	}
	defer client.CloseIdleConnections()
	vecs, err := client.Embed(ctx, plan.retrieval.model, []string{"check that this model serves embeddings"})
	if err != nil {
		return fmt.Errorf("the embeddings model %q cannot be used, so serve would rank needs lexically: pull it, set [retrieval].embeddings_model to a model the server serves for /embeddings, or remove [retrieval]: %w",
			plan.retrieval.model, err)
	}
	fmt.Fprintf(w, "embeddings model %s: answers (%d dimensions)\n", plan.retrieval.model, len(vecs[0]))
	return nil
}
