package match

import (
	"slices"
	"strings"
)

// ToolDoc builds the Doc for a tool so every caller ranks tools the same
// way: the server is the twin group and parameter names are sorted
// bytewise (schema key order must not change a score).
func ToolDoc(server, name, description string, params []string) Doc {
	ps := slices.Clone(params)
	slices.Sort(ps)
	return Doc{Group: server, Name: name, Description: description, Params: ps}
}

// ModelDoc builds the Doc for a catalog model. The name is the constant
// "model" so vendor ids do not bias the ranking, and the id is the group,
// so every model is alone in its group and two near-identical models come
// back Ambiguous rather than Duplicate.
func ModelDoc(id, description string) Doc {
	return Doc{Group: id, Name: "model", Description: description}
}

// PromptDoc builds the Doc need_prompt ranks for one catalog prompt: all
// prompts share one group, and the only parameter is "args".
func PromptDoc(name, description string) Doc {
	return Doc{Group: "promptforge", Name: name, Description: description, Params: []string{"args"}}
}

// Text is the text a ranker embeds for d:
//
//	<name with _ as spaces>. <description>. parameters: <params, comma-separated>
//
// with empty parts left out along with their separator. A description
// ending in "." keeps its period, giving "..": the reference does the same
// and embedding thresholds were measured on that exact text.
func (d Doc) Text() string {
	var b strings.Builder
	sep := func() {
		if b.Len() > 0 {
			b.WriteString(". ")
		}
	}
	if d.Name != "" {
		b.WriteString(strings.ReplaceAll(d.Name, "_", " "))
	}
	if d.Description != "" {
		sep()
		b.WriteString(d.Description)
	}
	if len(d.Params) > 0 {
		sep()
		b.WriteString("parameters: ")
		b.WriteString(strings.Join(d.Params, ", "))
	}
	return b.String()
}
